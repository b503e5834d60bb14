// Two-turn chat over the qwenrt C ABI with P/Invoke (Mono or .NET). Exits non-zero unless turn 2
// reused turn 1. usage: mono TwoTurnChat.exe MODEL.gguf [MAX_TOKENS]  (libqwenrt.so on the loader path)
using System;
using System.Runtime.InteropServices;
using System.Text;

static class Qwenrt {
  const string Lib = "qwenrt";
  public const int OK = 0, ROLE_USER = 1, ROLE_ASSISTANT = 2, PIECE_CONTENT = 0;
  public const int ABI_VERSION = 2;  // the header revision these layouts mirror

  [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
  [return: MarshalAs(UnmanagedType.I1)]
  public delegate bool StreamCallback(int kind, IntPtr text, UIntPtr len, IntPtr userData);

  [StructLayout(LayoutKind.Sequential)]
  public struct GenerateParams {
    public uint struct_size;
    public int max_tokens;
    public IntPtr stop_strings;
    public UIntPtr n_stop_strings;
    public IntPtr callback;
    public IntPtr user_data;
    // ABI 2
    public IntPtr sampling;
    public IntPtr constraint;
    public int tool_choice;
    public IntPtr tool_function;
    public int max_reasoning_tokens;
  }

  [StructLayout(LayoutKind.Sequential)]
  public struct Message {
    public uint struct_size;
    public int role;
    public IntPtr content;    // UTF-8, allocated by Utf8()
    public IntPtr reasoning;
    public IntPtr tool_calls;
    public UIntPtr n_tool_calls;
  }

  [StructLayout(LayoutKind.Sequential)]
  public struct Chat {
    public uint struct_size;
    public IntPtr messages;
    public UIntPtr n_messages;
    public IntPtr tools_json;
    [MarshalAs(UnmanagedType.I1)] public bool enable_thinking;
    [MarshalAs(UnmanagedType.I1)] public bool add_generation_prompt;
  }

  [StructLayout(LayoutKind.Sequential)]
  public struct Report {
    public uint struct_size;
    public long prompt_tokens, common_prefix, reused_tokens, prefilled_tokens, checkpoint_pos;
    public int miss_reason, n_checkpoints;
    public ulong checkpoint_bytes, state_bytes;
    public long generated_tokens;
    public int stop_reason;
    public double prefill_ms, ttft_ms, decode_ms, decode_tokens_per_s;
  }

  [DllImport(Lib)] public static extern IntPtr qwenrt_version();
  [DllImport(Lib)] public static extern IntPtr qwenrt_last_error();
  [DllImport(Lib)] public static extern int qwenrt_model_load(byte[] path, IntPtr p, out IntPtr model);
  [DllImport(Lib)] public static extern void qwenrt_model_free(IntPtr model);
  [DllImport(Lib)] public static extern int qwenrt_session_create(IntPtr model, IntPtr p, out IntPtr s);
  [DllImport(Lib)] public static extern void qwenrt_session_free(IntPtr session);
  [DllImport(Lib)] public static extern int qwenrt_abi_version();
  [DllImport(Lib)] public static extern int qwenrt_generate_params_init(ref GenerateParams p);
  [DllImport(Lib)] public static extern int qwenrt_chat_init(ref Chat chat);
  [DllImport(Lib)] public static extern int qwenrt_session_chat(IntPtr s, ref Chat chat, IntPtr sampling,
                                                                ref GenerateParams gp, ref Report r);
  [DllImport(Lib)] public static extern int qwenrt_session_get_reply(IntPtr s, int kind, byte[] buf,
                                                                     UIntPtr capacity, out UIntPtr needed);

  public static string FromUtf8(IntPtr p) {
    int n = 0;
    while (Marshal.ReadByte(p, n) != 0) ++n;
    byte[] b = new byte[n];
    Marshal.Copy(p, b, 0, n);
    return Encoding.UTF8.GetString(b);
  }

  public static IntPtr Utf8(string s) {  // caller frees with Marshal.FreeHGlobal
    byte[] b = Encoding.UTF8.GetBytes(s);
    IntPtr p = Marshal.AllocHGlobal(b.Length + 1);
    Marshal.Copy(b, 0, p, b.Length);
    Marshal.WriteByte(p, b.Length, 0);
    return p;
  }

  public static byte[] Utf8z(string s) {
    byte[] b = Encoding.UTF8.GetBytes(s);
    Array.Resize(ref b, b.Length + 1);
    return b;
  }

  // Params filled by the library for the size declared here (struct_size set first).
  public static GenerateParams NewGenerateParams() {
    var p = new GenerateParams { struct_size = (uint)Marshal.SizeOf(typeof(GenerateParams)) };
    Check(qwenrt_generate_params_init(ref p), "generate_params_init");
    return p;
  }

  public static Chat NewChat() {
    var c = new Chat { struct_size = (uint)Marshal.SizeOf(typeof(Chat)) };
    Check(qwenrt_chat_init(ref c), "chat_init");
    return c;
  }

  public static void Check(int status, string what) {
    if (status != OK) throw new Exception(what + ": " + FromUtf8(qwenrt_last_error()));
  }
}

static class Program {
  static readonly Qwenrt.StreamCallback OnPiece = (kind, text, len, user) => {
    if (kind == Qwenrt.PIECE_CONTENT) {
      byte[] b = new byte[(int)len];
      Marshal.Copy(text, b, 0, b.Length);
      Console.Write(Encoding.UTF8.GetString(b));
    }
    return true;
  };

  static Qwenrt.Message Msg(int role, IntPtr content) {
    return new Qwenrt.Message { struct_size = (uint)Marshal.SizeOf(typeof(Qwenrt.Message)), role = role,
                                content = content };
  }

  static string Turn(IntPtr session, Qwenrt.Message[] msgs, ref Qwenrt.GenerateParams gp, out Qwenrt.Report r) {
    int size = Marshal.SizeOf(typeof(Qwenrt.Message));
    IntPtr arr = Marshal.AllocHGlobal(size * msgs.Length);
    try {
      for (int i = 0; i < msgs.Length; ++i) Marshal.StructureToPtr(msgs[i], arr + i * size, false);
      Qwenrt.Chat chat = Qwenrt.NewChat();
      chat.messages = arr;
      chat.n_messages = (UIntPtr)msgs.Length;
      r = new Qwenrt.Report { struct_size = (uint)Marshal.SizeOf(typeof(Qwenrt.Report)) };
      Qwenrt.Check(Qwenrt.qwenrt_session_chat(session, ref chat, IntPtr.Zero, ref gp, ref r), "session_chat");
      byte[] buf = new byte[1 << 16];
      UIntPtr needed;
      Qwenrt.Check(Qwenrt.qwenrt_session_get_reply(session, Qwenrt.PIECE_CONTENT, buf, (UIntPtr)buf.Length,
                                                   out needed), "get_reply");
      return Encoding.UTF8.GetString(buf, 0, (int)needed - 1);
    } finally {
      Marshal.FreeHGlobal(arr);
    }
  }

  static int Main(string[] args) {
    if (args.Length < 1) {
      Console.Error.WriteLine("usage: TwoTurnChat.exe MODEL.gguf [MAX_TOKENS]");
      return 2;
    }
    try {
      Console.WriteLine("qwenrt " + Qwenrt.FromUtf8(Qwenrt.qwenrt_version()));
      if (Qwenrt.qwenrt_abi_version() < Qwenrt.ABI_VERSION) throw new Exception("libqwenrt is too old");
      IntPtr model, session;
      Qwenrt.Check(Qwenrt.qwenrt_model_load(Qwenrt.Utf8z(args[0]), IntPtr.Zero, out model), "model_load");
      Qwenrt.Check(Qwenrt.qwenrt_session_create(model, IntPtr.Zero, out session), "session_create");
      Qwenrt.GenerateParams gp = Qwenrt.NewGenerateParams();
      gp.max_tokens = args.Length > 1 ? int.Parse(args[1]) : 16;
      gp.callback = Marshal.GetFunctionPointerForDelegate(OnPiece);

      IntPtr q1 = Qwenrt.Utf8("What is the capital of Kenya?"), q2 = Qwenrt.Utf8("And of Ghana?");
      Console.Write("turn 1: ");
      Qwenrt.Report r1, r2;
      string reply1 = Turn(session, new[] { Msg(Qwenrt.ROLE_USER, q1) }, ref gp, out r1);
      IntPtr a1 = Qwenrt.Utf8(reply1);
      Console.Write("\nturn 2: ");
      Turn(session, new[] { Msg(Qwenrt.ROLE_USER, q1), Msg(Qwenrt.ROLE_ASSISTANT, a1), Msg(Qwenrt.ROLE_USER, q2) },
           ref gp, out r2);
      Console.WriteLine("\nturn 1: prompt {0}, prefilled {1}", r1.prompt_tokens, r1.prefilled_tokens);
      Console.WriteLine("turn 2: prompt {0}, reused {1}, prefilled {2}, ttft {3:F2} ms", r2.prompt_tokens,
                        r2.reused_tokens, r2.prefilled_tokens, r2.ttft_ms);
      Qwenrt.qwenrt_session_free(session);
      Qwenrt.qwenrt_model_free(model);
      Marshal.FreeHGlobal(q1);
      Marshal.FreeHGlobal(q2);
      Marshal.FreeHGlobal(a1);
      if (r2.reused_tokens <= 0 || r2.reused_tokens + r2.prefilled_tokens != r2.prompt_tokens ||
          r2.prefilled_tokens >= r2.prompt_tokens) {
        Console.Error.WriteLine("FAIL: turn 2 did not reuse turn 1");
        return 1;
      }
      Console.WriteLine("OK: turn 2 reused {0} tokens of turn 1", r2.reused_tokens);
      return 0;
    } catch (Exception e) {
      Console.Error.WriteLine("FAIL: " + e.Message);
      return 1;
    }
  }
}
