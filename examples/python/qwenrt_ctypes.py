"""Minimal ctypes binding of the qwenrt C ABI (include/qwenrt/qwenrt.h): the structs and functions a
chat needs. Struct layouts mirror the header field by field (ABI 2); every params struct is filled by
the library's init function with struct_size = ctypes.sizeof (see `init`), so an older binding keeps
working with a newer library and a newer one is told apart by an older library."""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_bool, c_char, c_char_p, c_double,
                    c_float, c_int, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

OK, INVALID_ARGUMENT, IO, BAD_FORMAT, UNSUPPORTED, OUT_OF_MEMORY, CONTEXT_FULL, BUFFER_TOO_SMALL, \
    DEVICE, CANCELLED, INTERNAL = range(11)
ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT, ROLE_TOOL = range(4)
PIECE_CONTENT, PIECE_REASONING, PIECE_TOOL_CALL = range(3)
KV_DEFAULT, KV_F32, KV_F16, KV_Q8_0 = -1, 0, 1, 2
TOOL_CHOICE_FREE, TOOL_CHOICE_NONE, TOOL_CHOICE_AUTO, TOOL_CHOICE_REQUIRED, \
    TOOL_CHOICE_FUNCTION = range(5)
ABI_VERSION = 2  # the header revision these layouts mirror

ProgressCallback = CFUNCTYPE(c_bool, c_float, c_void_p)
LogCallback = CFUNCTYPE(None, c_char_p, c_void_p)
StreamCallback = CFUNCTYPE(c_bool, c_int, POINTER(c_char), c_size_t, c_void_p)


class ModelParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("check_tensors", c_bool),
                ("progress_callback", ProgressCallback), ("progress_user_data", c_void_p),
                # ABI 2
                ("read_file", c_bool), ("pack_weights", c_bool), ("template_max_bytes", c_uint64),
                ("template_max_cost", c_uint64), ("template_max_output_bytes", c_uint64),
                ("template_max_value_depth", c_int32)]


class SessionParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("n_ctx", c_int32), ("n_threads", c_int32),
                ("backend", c_int), ("checkpoint_budget", c_uint64),
                ("checkpoint_interval", c_int32), ("history_mode", c_int),
                ("log_callback", LogCallback), ("log_user_data", c_void_p),
                ("split_invariant", c_bool),
                # ABI 2
                ("reserved_abi2", c_uint64), ("kv_type", c_int)]


class SamplingParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("temperature", c_float), ("top_k", c_int32),
                ("top_p", c_float), ("min_p", c_float), ("repeat_penalty", c_float),
                ("repeat_last_n", c_int32), ("presence_penalty", c_float),
                ("frequency_penalty", c_float), ("seed", c_uint64)]


class GenerateParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("max_tokens", c_int32),
                ("stop_strings", POINTER(c_char_p)), ("n_stop_strings", c_size_t),
                ("callback", StreamCallback), ("user_data", c_void_p),
                # ABI 2
                ("sampling", POINTER(SamplingParams)), ("constraint", c_void_p),
                ("tool_choice", c_int), ("tool_function", c_char_p),
                ("max_reasoning_tokens", c_int32)]


class ToolCall(Structure):
    _fields_ = [("name", c_char_p), ("arguments_json", c_char_p)]


class Message(Structure):
    _fields_ = [("struct_size", c_uint32), ("role", c_int), ("content", c_char_p),
                ("reasoning", c_char_p), ("tool_calls", POINTER(ToolCall)), ("n_tool_calls", c_size_t)]


class Chat(Structure):
    _fields_ = [("struct_size", c_uint32), ("messages", POINTER(Message)), ("n_messages", c_size_t),
                ("tools_json", c_char_p), ("enable_thinking", c_bool),
                ("add_generation_prompt", c_bool)]


class Report(Structure):
    _fields_ = [("struct_size", c_uint32), ("prompt_tokens", c_int64), ("common_prefix", c_int64),
                ("reused_tokens", c_int64), ("prefilled_tokens", c_int64),
                ("checkpoint_pos", c_int64), ("miss_reason", c_int), ("n_checkpoints", c_int32),
                ("checkpoint_bytes", c_uint64), ("state_bytes", c_uint64),
                ("generated_tokens", c_int64), ("stop_reason", c_int), ("prefill_ms", c_double),
                ("ttft_ms", c_double), ("decode_ms", c_double), ("decode_tokens_per_s", c_double)]


class QwenrtError(Exception):
    pass


class Library:
    """Loads libqwenrt and declares the functions used here."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        self.lib = lib
        lib.qwenrt_last_error.restype = c_char_p
        lib.qwenrt_status_string.restype = c_char_p
        lib.qwenrt_status_string.argtypes = [c_int]
        lib.qwenrt_version.restype = c_char_p
        lib.qwenrt_abi_version.restype = c_int
        lib.qwenrt_model_load.argtypes = [c_char_p, POINTER(ModelParams), POINTER(c_void_p)]
        lib.qwenrt_model_free.argtypes = [c_void_p]
        lib.qwenrt_model_free.restype = None
        lib.qwenrt_session_create.argtypes = [c_void_p, POINTER(SessionParams), POINTER(c_void_p)]
        lib.qwenrt_session_free.argtypes = [c_void_p]
        lib.qwenrt_session_free.restype = None
        lib.qwenrt_session_chat.argtypes = [c_void_p, POINTER(Chat), POINTER(SamplingParams),
                                            POINTER(GenerateParams), POINTER(Report)]
        lib.qwenrt_session_get_reply.argtypes = [c_void_p, c_int, c_char_p, c_size_t,
                                                 POINTER(c_size_t)]
        self.init_functions = {ModelParams: lib.qwenrt_model_params_init,
                               SessionParams: lib.qwenrt_session_params_init,
                               SamplingParams: lib.qwenrt_sampling_params_init,
                               GenerateParams: lib.qwenrt_generate_params_init,
                               Chat: lib.qwenrt_chat_init}
        for struct, fn in self.init_functions.items():
            fn.argtypes = [POINTER(struct)]
            fn.restype = c_int
        if lib.qwenrt_abi_version() < ABI_VERSION:
            raise QwenrtError("libqwenrt ABI %d is older than this binding's %d" %
                              (lib.qwenrt_abi_version(), ABI_VERSION))

    def init(self, struct):
        """A params struct (ModelParams, SessionParams, ...) with the library's defaults."""
        p = struct()
        p.struct_size = ctypes.sizeof(struct)
        self.check(self.init_functions[struct](byref(p)), "init " + struct.__name__)
        return p

    def check(self, status, what):
        if status != OK:
            raise QwenrtError("%s: %s" % (what, self.lib.qwenrt_last_error().decode("utf-8", "replace")))


def message(role, content, reasoning=None):
    return Message(ctypes.sizeof(Message), role, content.encode("utf-8"),
                   reasoning.encode("utf-8") if reasoning else None, None, 0)


def default_library_path():
    return os.environ.get("QWENRT_LIB", "libqwenrt.so")
