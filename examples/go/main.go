// Two-turn chat over the qwenrt C ABI with cgo. Exits non-zero unless turn 2 reused turn 1.
// Build flags come from the environment: CGO_CFLAGS=-I<include dir>, CGO_LDFLAGS=-L<lib dir>.
// usage: twoturnchat MODEL.gguf [MAX_TOKENS]
package main

/*
#cgo LDFLAGS: -lqwenrt
#include <stdlib.h>
#include "qwenrt/qwenrt.h"

// The stream callback must be a C function; it forwards content pieces to Go.
extern bool goOnPiece(int kind, char *text, size_t len);
static bool on_piece(qwenrt_piece_kind kind, const char *text, size_t len, void *user_data) {
  (void)user_data;
  return goOnPiece((int)kind, (char *)text, len);
}
static void set_callback(qwenrt_generate_params *gp) { gp->callback = on_piece; }
static qwenrt_message make_message(qwenrt_role role, const char *content) {
  qwenrt_message m = {sizeof(qwenrt_message), role, content, NULL, NULL, 0};
  return m;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"
)

//export goOnPiece
func goOnPiece(kind C.int, text *C.char, n C.size_t) C.bool {
	if kind == C.QWENRT_PIECE_CONTENT {
		fmt.Print(C.GoStringN(text, C.int(n)))
	}
	return C.bool(true)
}

func check(st C.qwenrt_status, what string) {
	if st != C.QWENRT_OK {
		fmt.Fprintf(os.Stderr, "FAIL: %s: %s\n", what, C.GoString(C.qwenrt_last_error()))
		os.Exit(1)
	}
}

func turn(session *C.qwenrt_session, msgs []C.qwenrt_message, gp *C.qwenrt_generate_params) (string, C.qwenrt_report) {
	// The message array is passed to C, so it lives in C memory (cgo forbids Go pointers to Go
	// memory that holds pointers).
	size := C.size_t(len(msgs)) * C.size_t(unsafe.Sizeof(msgs[0]))
	arr := (*C.qwenrt_message)(C.malloc(size))
	defer C.free(unsafe.Pointer(arr))
	copy(unsafe.Slice(arr, len(msgs)), msgs)
	var chat C.qwenrt_chat
	chat.struct_size = C.uint32_t(unsafe.Sizeof(chat)) // the size this header knows
	check(C.qwenrt_chat_init(&chat), "chat_init")
	chat.messages = arr
	chat.n_messages = C.size_t(len(msgs))
	var report C.qwenrt_report
	report.struct_size = C.uint32_t(unsafe.Sizeof(report))
	check(C.qwenrt_session_chat(session, &chat, nil, gp, &report), "session_chat")
	var needed C.size_t
	buf := (*C.char)(C.malloc(1 << 16))
	defer C.free(unsafe.Pointer(buf))
	check(C.qwenrt_session_get_reply(session, C.QWENRT_PIECE_CONTENT, buf, 1<<16, &needed), "get_reply")
	return C.GoString(buf), report
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: twoturnchat MODEL.gguf [MAX_TOKENS]")
		os.Exit(2)
	}
	maxTokens := 16
	if len(os.Args) > 2 {
		maxTokens, _ = strconv.Atoi(os.Args[2])
	}
	fmt.Println("qwenrt", C.GoString(C.qwenrt_version()))
	if C.qwenrt_abi_version() < C.QWENRT_ABI_VERSION {
		fmt.Fprintln(os.Stderr, "FAIL: libqwenrt is older than the header this was built with")
		os.Exit(1)
	}
	path := C.CString(os.Args[1])
	defer C.free(unsafe.Pointer(path))
	var model *C.qwenrt_model
	var session *C.qwenrt_session
	check(C.qwenrt_model_load(path, nil, &model), "model_load")
	check(C.qwenrt_session_create(model, nil, &session), "session_create")

	var gp C.qwenrt_generate_params
	gp.struct_size = C.uint32_t(unsafe.Sizeof(gp))
	check(C.qwenrt_generate_params_init(&gp), "generate_params_init")
	gp.max_tokens = C.int32_t(maxTokens)
	C.set_callback(&gp)

	q1 := C.CString("What is the capital of Kenya?")
	q2 := C.CString("And of Ghana?")
	defer C.free(unsafe.Pointer(q1))
	defer C.free(unsafe.Pointer(q2))
	fmt.Print("turn 1: ")
	reply1, r1 := turn(session, []C.qwenrt_message{C.make_message(C.QWENRT_ROLE_USER, q1)}, &gp)
	a1 := C.CString(reply1)
	defer C.free(unsafe.Pointer(a1))
	fmt.Print("\nturn 2: ")
	_, r2 := turn(session, []C.qwenrt_message{C.make_message(C.QWENRT_ROLE_USER, q1),
		C.make_message(C.QWENRT_ROLE_ASSISTANT, a1), C.make_message(C.QWENRT_ROLE_USER, q2)}, &gp)
	fmt.Printf("\nturn 1: prompt %d, prefilled %d\n", r1.prompt_tokens, r1.prefilled_tokens)
	fmt.Printf("turn 2: prompt %d, reused %d, prefilled %d, ttft %.2f ms\n", r2.prompt_tokens,
		r2.reused_tokens, r2.prefilled_tokens, float64(r2.ttft_ms))
	C.qwenrt_session_free(session)
	C.qwenrt_model_free(model)
	if r2.reused_tokens <= 0 || r2.reused_tokens+r2.prefilled_tokens != r2.prompt_tokens ||
		r2.prefilled_tokens >= r2.prompt_tokens {
		fmt.Fprintln(os.Stderr, "FAIL: turn 2 did not reuse turn 1")
		os.Exit(1)
	}
	fmt.Printf("OK: turn 2 reused %d tokens of turn 1\n", r2.reused_tokens)
}
