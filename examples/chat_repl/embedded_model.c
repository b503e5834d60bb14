/* The demo model (tests/data/demo-f32.gguf, trained by tools/demo-model/) embedded in chat_repl
 * with the assembler's .incbin, so the REPL runs with no --model argument. QWENRT_EMBED_PATH is set
 * by CMakeLists.txt. Needs GCC or Clang (GNU assembler syntax). */
#ifndef QWENRT_EMBED_PATH
#error "QWENRT_EMBED_PATH must name the GGUF file to embed"
#endif

__asm__(
    ".pushsection .rodata\n"
    ".balign 64\n"
    ".globl qwenrt_repl_embedded_model\n"
    "qwenrt_repl_embedded_model:\n"
    ".incbin \"" QWENRT_EMBED_PATH
    "\"\n"
    ".globl qwenrt_repl_embedded_model_end\n"
    "qwenrt_repl_embedded_model_end:\n"
    ".popsection\n");
