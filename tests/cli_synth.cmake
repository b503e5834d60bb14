# qwenrt-cli synth: writes a tiny random-weight model from a directory that is not the repository
# root (its default vocabulary must not depend on the working directory), then `qwenrt-cli gguf
# --check-tensors` reads the result back; a missing --vocab-from file must fail with a message.
if(QWENRT_BUILD_EXAMPLES)
  set(_synth_dir ${CMAKE_CURRENT_BINARY_DIR}/cli_synth_cwd)
  file(MAKE_DIRECTORY ${_synth_dir})
  add_test(NAME cli_synth_other_cwd COMMAND qwenrt-cli synth --shape tiny --out synth-tiny.gguf --threads 2
           WORKING_DIRECTORY ${_synth_dir})
  set_tests_properties(cli_synth_other_cwd PROPERTIES FIXTURES_SETUP cli_synth_model
                       PASS_REGULAR_EXPRESSION "wrote synth-tiny.gguf")
  add_test(NAME cli_synth_readback COMMAND qwenrt-cli gguf --model ${_synth_dir}/synth-tiny.gguf --check-tensors)
  set_tests_properties(cli_synth_readback PROPERTIES FIXTURES_REQUIRED cli_synth_model)
  # --mtp: one MTP block (blk.8 of the tiny shape) with the real names; read back and checked.
  add_test(NAME cli_synth_mtp COMMAND qwenrt-cli synth --shape tiny --mtp --out synth-tiny-mtp.gguf
           --threads 2 WORKING_DIRECTORY ${_synth_dir})
  set_tests_properties(cli_synth_mtp PROPERTIES FIXTURES_SETUP cli_synth_mtp_model
                       PASS_REGULAR_EXPRESSION "8 layers \\+ 1 MTP block")
  add_test(NAME cli_synth_mtp_readback COMMAND qwenrt-cli gguf --model
           ${_synth_dir}/synth-tiny-mtp.gguf --check-tensors)
  set_tests_properties(cli_synth_mtp_readback PROPERTIES FIXTURES_REQUIRED cli_synth_mtp_model
                       PASS_REGULAR_EXPRESSION "blk.8.nextn.eh_proj.weight")
  add_test(NAME cli_synth_missing_vocab COMMAND qwenrt-cli synth --shape tiny --out synth-none.gguf
           --vocab-from no-such-vocab.gguf WORKING_DIRECTORY ${_synth_dir})
  # Exits 1; the message must name the file (PASS_REGULAR_EXPRESSION alone decides the result).
  set_tests_properties(cli_synth_missing_vocab PROPERTIES
                       PASS_REGULAR_EXPRESSION "cannot read the vocabulary from no-such-vocab.gguf")
endif()
