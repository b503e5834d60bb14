# Run by the chat_repl_script test (cmake -P). Inputs: REPL (the chat_repl binary), WORK (scratch dir),
# MOE_MODEL (a random-weight fixture GGUF whose reasoning is visible noise).
# Process A: three turns (+ /save after turn 2). Process B: /load, then turn 3 again. Checks the
# per-turn report lines "[turn N] prompt P | reused R | prefilled F | ..." and the embedded demo
# model's answers. Processes C and D check
# what a pipe shows of a reply: a note for hidden reasoning, or the reasoning labelled.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Extra arguments after out_var go to chat_repl; its stderr lands in <out_var>_err.
function(repl name input out_var)
  file(WRITE ${WORK}/${name}.in "${input}")
  execute_process(COMMAND ${REPL} --max-tokens 64 --threads 2 ${ARGN} INPUT_FILE ${WORK}/${name}.in
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc WORKING_DIRECTORY ${WORK})
  file(WRITE ${WORK}/${name}.out "${out}")
  message(STATUS "--- ${name} stdout:\n${out}--- ${name} stderr:\n${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "chat_repl (${name}) exited with ${rc}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${out_var}_err "${err}" PARENT_SCOPE)
endfunction()

# Extracts prompt/reused/prefilled of report line "[turn N]" into <prefix>_prompt etc.
function(turn_report text n prefix)
  if(NOT text MATCHES "\\[turn ${n}\\] prompt ([0-9]+) \\| reused ([0-9]+) \\| prefilled ([0-9]+)")
    message(FATAL_ERROR "no report line for turn ${n}")
  endif()
  set(${prefix}_prompt ${CMAKE_MATCH_1} PARENT_SCOPE)
  set(${prefix}_reused ${CMAKE_MATCH_2} PARENT_SCOPE)
  set(${prefix}_prefilled ${CMAKE_MATCH_3} PARENT_SCOPE)
endfunction()

function(expect cond_text)
  if(NOT (${ARGN}))
    message(FATAL_ERROR "expected ${cond_text}")
  endif()
endfunction()

repl(a "Hello!\nWhat is the capital of Kenya?\n/save session.bin\nAnd of Ghana?\n/stats\n" out_a)
turn_report("${out_a}" 1 t1)
turn_report("${out_a}" 2 t2)
turn_report("${out_a}" 3 t3)
expect("turn 1 reuses nothing" t1_reused EQUAL 0 AND t1_prefilled EQUAL t1_prompt)
math(EXPR t1_floor "${t1_prompt} - 8")
math(EXPR t2_floor "${t2_prompt} - 8")
math(EXPR t2_sum "${t2_reused} + ${t2_prefilled}")
math(EXPR t3_sum "${t3_reused} + ${t3_prefilled}")
expect("turn 2 reuses turn 1's prompt (${t2_reused} >= ${t1_floor})" t2_reused GREATER_EQUAL t1_floor)
expect("turn 3 reuses turn 2's prompt (${t3_reused} >= ${t2_floor})" t3_reused GREATER_EQUAL t2_floor)
expect("turn 2 reused + prefilled = prompt" t2_sum EQUAL t2_prompt)
expect("turn 3 reused + prefilled = prompt" t3_sum EQUAL t3_prompt)
expect("turn 3 prefills less than its prompt" t3_prefilled LESS t3_prompt)
if(NOT EXISTS ${WORK}/session.bin OR NOT EXISTS ${WORK}/session.bin.chat)
  message(FATAL_ERROR "/save did not write session.bin and session.bin.chat")
endif()

# A new process loads the session saved after turn 2 and asks turn 3 again: the same reuse as the
# uninterrupted run, i.e. turns 1-2 are not prefilled again, and the same (greedy) reply.
repl(b "/load session.bin\nAnd of Ghana?\n" out_b)
if(NOT out_b MATCHES "loaded [0-9]+ tokens and 4 messages")
  message(FATAL_ERROR "/load did not report 4 messages")
endif()
turn_report("${out_b}" 3 b3)
expect("loaded turn 3 prompt ${b3_prompt} == ${t3_prompt}" b3_prompt EQUAL t3_prompt)
expect("loaded turn 3 reused ${b3_reused} == ${t3_reused}" b3_reused EQUAL t3_reused)
expect("loaded turn 3 prefilled ${b3_prefilled} == ${t3_prefilled}" b3_prefilled EQUAL t3_prefilled)
string(REGEX MATCH "saved [^\n]*\n(.*)\n\\[turn 3\\]" m_a "${out_a}")
set(reply_a "${CMAKE_MATCH_1}")
string(REGEX MATCH "loaded [^\n]*\n(.*)\n\\[turn 3\\]" m_b "${out_b}")
set(reply_b "${CMAKE_MATCH_1}")
if(NOT reply_a STREQUAL reply_b)
  message(FATAL_ERROR "turn 3 replies differ after /load:\n  '${reply_a}'\n  '${reply_b}'")
endif()
# The embedded model is the trained demo model (it says so) and answers: turn 2 names Kenya's
# capital, turn 3 (a follow-up that needs turn 2) Ghana's.
if(NOT out_a_err MATCHES "note: the embedded demo model has")
  message(FATAL_ERROR "no startup note about the embedded demo model")
endif()
string(REGEX MATCH "\\[turn 1\\][^\n]*\n(.*)\\[turn 2\\]" m_2 "${out_a}")
if(NOT CMAKE_MATCH_1 MATCHES "Nairobi")
  message(FATAL_ERROR "turn 2: the embedded demo model did not answer Nairobi ('${CMAKE_MATCH_1}')")
endif()
if(NOT reply_a MATCHES "Accra")
  message(FATAL_ERROR "turn 3: the embedded demo model did not answer Accra ('${reply_a}')")
endif()

# A model whose reasoning is visible noise: hidden through a pipe with a count, or labelled.
repl(c "Hello! Who are you?\n" out_c --model ${MOE_MODEL})
if(NOT out_c MATCHES "\\(reasoning: ([0-9]+) chars hidden; --reasoning show prints it\\)\n\\[turn 1\\]")
  message(FATAL_ERROR "hidden reasoning: no '(reasoning: N chars hidden ...)' note before turn 1")
endif()
set(hidden_chars ${CMAKE_MATCH_1})
expect("hidden reasoning has characters (${hidden_chars})" hidden_chars GREATER 0)
if(out_c_err MATCHES "embedded demo model")
  message(FATAL_ERROR "the demo-model note is for the embedded model only")
endif()
repl(d "Hello! Who are you?\n" out_d --model ${MOE_MODEL} --reasoning show)
if(NOT out_d MATCHES "^\\[reasoning\\] .+\n\\[turn 1\\]" OR out_d MATCHES "chars hidden")
  message(FATAL_ERROR "--reasoning show: the reasoning is not printed after a '[reasoning] ' label")
endif()

message(STATUS "chat_repl_script: OK (turn 2 reused ${t2_reused}/${t2_prompt}, turn 3 reused "
               "${t3_reused}/${t3_prompt}; after /load turn 3 reused ${b3_reused}/${b3_prompt})")
