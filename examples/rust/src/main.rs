//! Two-turn chat over the qwenrt C ABI, declared by hand with `extern "C"` (no crates, no bindgen).
//! Exits non-zero unless turn 2 reused turn 1. usage: two_turn_chat MODEL.gguf [MAX_TOKENS]
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};

#[repr(C)]
struct Model {
    _opaque: [u8; 0],
}
#[repr(C)]
struct Session {
    _opaque: [u8; 0],
}

type Status = c_int;
const OK: Status = 0;
const ROLE_USER: c_int = 1;
const ROLE_ASSISTANT: c_int = 2;
const PIECE_CONTENT: c_int = 0;

type StreamCallback = extern "C" fn(c_int, *const c_char, usize, *mut c_void) -> bool;

#[repr(C)]
struct GenerateParams {
    struct_size: u32,
    max_tokens: i32,
    stop_strings: *const *const c_char,
    n_stop_strings: usize,
    callback: Option<StreamCallback>,
    user_data: *mut c_void,
    // ABI 2
    sampling: *const c_void,
    constraint: *const c_void,
    tool_choice: c_int,
    tool_function: *const c_char,
    max_reasoning_tokens: i32,
}

#[repr(C)]
struct Message {
    struct_size: u32,
    role: c_int,
    content: *const c_char,
    reasoning: *const c_char,
    tool_calls: *const c_void,
    n_tool_calls: usize,
}

#[repr(C)]
struct Chat {
    struct_size: u32,
    messages: *const Message,
    n_messages: usize,
    tools_json: *const c_char,
    enable_thinking: bool,
    add_generation_prompt: bool,
}

#[repr(C)]
#[derive(Default)]
struct Report {
    struct_size: u32,
    prompt_tokens: i64,
    common_prefix: i64,
    reused_tokens: i64,
    prefilled_tokens: i64,
    checkpoint_pos: i64,
    miss_reason: c_int,
    n_checkpoints: i32,
    checkpoint_bytes: u64,
    state_bytes: u64,
    generated_tokens: i64,
    stop_reason: c_int,
    prefill_ms: f64,
    ttft_ms: f64,
    decode_ms: f64,
    decode_tokens_per_s: f64,
}

extern "C" {
    fn qwenrt_version() -> *const c_char;
    fn qwenrt_last_error() -> *const c_char;
    fn qwenrt_model_load(path: *const c_char, params: *const c_void, out: *mut *mut Model) -> Status;
    fn qwenrt_model_free(model: *mut Model);
    fn qwenrt_session_create(model: *mut Model, params: *const c_void, out: *mut *mut Session) -> Status;
    fn qwenrt_session_free(session: *mut Session);
    fn qwenrt_abi_version() -> c_int;
    fn qwenrt_generate_params_init(params: *mut GenerateParams) -> Status;
    fn qwenrt_chat_init(chat: *mut Chat) -> Status;
    fn qwenrt_session_chat(
        session: *mut Session,
        chat: *const Chat,
        sampling: *const c_void,
        params: *const GenerateParams,
        report: *mut Report,
    ) -> Status;
    fn qwenrt_session_get_reply(
        session: *mut Session,
        kind: c_int,
        buf: *mut c_char,
        capacity: usize,
        needed: *mut usize,
    ) -> Status;
}

/// The interface revision these declarations mirror (QWENRT_ABI_VERSION of qwenrt.h).
const ABI_VERSION: c_int = 2;

/// A params struct filled by the library's init function: struct_size is set to this declaration's
/// size first, so the library fills (and later reads) exactly the fields declared here.
fn init<T>(f: unsafe extern "C" fn(*mut T) -> Status, what: &str) -> Result<T, String> {
    let mut p = std::mem::MaybeUninit::<T>::zeroed();
    // Every params struct starts with `uint32_t struct_size`.
    unsafe { *(p.as_mut_ptr() as *mut u32) = std::mem::size_of::<T>() as u32 };
    check(unsafe { f(p.as_mut_ptr()) }, what)?;
    Ok(unsafe { p.assume_init() })
}

fn check(status: Status, what: &str) -> Result<(), String> {
    if status == OK {
        return Ok(());
    }
    let detail = unsafe { CStr::from_ptr(qwenrt_last_error()) }.to_string_lossy().into_owned();
    Err(format!("{} failed: {}", what, detail))
}

extern "C" fn on_piece(kind: c_int, text: *const c_char, len: usize, _user: *mut c_void) -> bool {
    if kind == PIECE_CONTENT {
        let bytes = unsafe { std::slice::from_raw_parts(text as *const u8, len) };
        print!("{}", String::from_utf8_lossy(bytes));
    }
    true
}

fn message(role: c_int, content: &CString) -> Message {
    Message {
        struct_size: std::mem::size_of::<Message>() as u32,
        role,
        content: content.as_ptr(),
        reasoning: std::ptr::null(),
        tool_calls: std::ptr::null(),
        n_tool_calls: 0,
    }
}

fn turn(session: *mut Session, msgs: &[Message], gp: &GenerateParams) -> Result<(String, Report), String> {
    let mut chat = init(qwenrt_chat_init, "chat_init")?;
    chat.messages = msgs.as_ptr();
    chat.n_messages = msgs.len();
    let mut report = Report { struct_size: std::mem::size_of::<Report>() as u32, ..Default::default() };
    check(unsafe { qwenrt_session_chat(session, &chat, std::ptr::null(), gp, &mut report) }, "session_chat")?;
    let mut needed = 0usize;
    let mut buf = vec![0u8; 256];
    let mut st = unsafe { qwenrt_session_get_reply(session, PIECE_CONTENT, buf.as_mut_ptr() as *mut c_char, buf.len(), &mut needed) };
    if st != OK && needed > buf.len() {
        buf.resize(needed, 0);
        st = unsafe { qwenrt_session_get_reply(session, PIECE_CONTENT, buf.as_mut_ptr() as *mut c_char, buf.len(), &mut needed) };
    }
    check(st, "get_reply")?;
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let reply = String::from_utf8_lossy(&buf[..len]).into_owned();
    Ok((reply, report))
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        return Err("usage: two_turn_chat MODEL.gguf [MAX_TOKENS]".into());
    }
    let version = unsafe { CStr::from_ptr(qwenrt_version()) }.to_string_lossy().into_owned();
    println!("qwenrt {}", version);
    if unsafe { qwenrt_abi_version() } < ABI_VERSION {
        return Err(format!("libqwenrt ABI {} is older than {}", unsafe { qwenrt_abi_version() }, ABI_VERSION));
    }
    let path = CString::new(args[1].clone()).map_err(|e| e.to_string())?;
    let mut model: *mut Model = std::ptr::null_mut();
    let mut session: *mut Session = std::ptr::null_mut();
    check(unsafe { qwenrt_model_load(path.as_ptr(), std::ptr::null(), &mut model) }, "model_load")?;
    check(unsafe { qwenrt_session_create(model, std::ptr::null(), &mut session) }, "session_create")?;

    let mut gp = init(qwenrt_generate_params_init, "generate_params_init")?;
    gp.max_tokens = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(16);
    gp.callback = Some(on_piece);

    let q1 = CString::new("What is the capital of Kenya?").unwrap();
    let q2 = CString::new("And of Ghana?").unwrap();
    print!("turn 1: ");
    let (reply1, r1) = turn(session, &[message(ROLE_USER, &q1)], &gp)?;
    let a1 = CString::new(reply1).map_err(|e| e.to_string())?;
    print!("\nturn 2: ");
    let msgs = [message(ROLE_USER, &q1), message(ROLE_ASSISTANT, &a1), message(ROLE_USER, &q2)];
    let (_reply2, r2) = turn(session, &msgs, &gp)?;
    println!("\nturn 1: prompt {}, prefilled {}", r1.prompt_tokens, r1.prefilled_tokens);
    println!(
        "turn 2: prompt {}, reused {}, prefilled {}, ttft {:.2} ms",
        r2.prompt_tokens, r2.reused_tokens, r2.prefilled_tokens, r2.ttft_ms
    );
    unsafe {
        qwenrt_session_free(session);
        qwenrt_model_free(model);
    }
    if r2.reused_tokens <= 0
        || r2.reused_tokens + r2.prefilled_tokens != r2.prompt_tokens
        || r2.prefilled_tokens >= r2.prompt_tokens
    {
        return Err("turn 2 did not reuse turn 1".into());
    }
    println!("OK: turn 2 reused {} tokens of turn 1", r2.reused_tokens);
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("FAIL: {}", e);
        std::process::exit(1);
    }
}
