"""Training and held-out data for the demo model: generated here, from fixed tables and a seeded
random generator (no downloaded text, nothing to license but this file's own tables).

Every conversation is a list of chat messages (OpenAI style: role, content, reasoning_content,
tool_calls) plus an optional tool list; render() turns it into text with the real Qwen3.5 chat
template (the one in shared/fixtures/chat, the same jinja environment transformers uses).

Held-out split: an item is held out by a key (an arithmetic triple, a (country, phrasing) pair, a
(city, phrasing) pair, a word, a (name, age) pair...) chosen by a hash of the key, so the training
set never contains a held-out key, whatever the number of conversations asked for.
"""
import hashlib
import json
import random

# --- fixed tables -------------------------------------------------------------------------------
CAPITALS = [
    ("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"),
    ("Portugal", "Lisbon"), ("Kenya", "Nairobi"), ("Japan", "Tokyo"), ("China", "Beijing"),
    ("India", "New Delhi"), ("Egypt", "Cairo"), ("Canada", "Ottawa"), ("Mexico", "Mexico City"),
    ("Brazil", "Brasilia"), ("Argentina", "Buenos Aires"), ("Peru", "Lima"), ("Chile", "Santiago"),
    ("Russia", "Moscow"), ("Poland", "Warsaw"), ("Greece", "Athens"), ("Turkey", "Ankara"),
    ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"), ("Denmark", "Copenhagen"),
    ("Ireland", "Dublin"), ("Austria", "Vienna"), ("Hungary", "Budapest"), ("Ghana", "Accra"),
    ("Nigeria", "Abuja"), ("Ethiopia", "Addis Ababa"), ("Morocco", "Rabat"), ("Australia", "Canberra"),
    ("Thailand", "Bangkok"), ("Vietnam", "Hanoi"), ("Indonesia", "Jakarta"), ("Iran", "Tehran"),
    ("Cuba", "Havana"), ("Colombia", "Bogota"), ("Belgium", "Brussels"), ("Netherlands", "Amsterdam"),
]
CITIES = ["Paris", "Berlin", "Rome", "Madrid", "Lisbon", "Nairobi", "Tokyo", "Cairo", "Ottawa",
          "Lima", "Moscow", "Warsaw", "Athens", "Oslo", "Dublin", "Vienna", "Accra", "Bangkok",
          "Hanoi", "Havana", "London", "Boston", "Chicago", "Sydney", "Seoul", "Toronto", "Munich",
          "Milan", "Zurich", "Prague"]
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy"]
WORDS = ["cat", "dog", "sun", "tree", "house", "apple", "river", "green", "light", "music",
         "table", "water", "stone", "bread", "chair", "cloud", "plant", "happy", "mouse", "train",
         "paper", "smile", "horse", "dream", "ocean", "storm", "tiger", "lemon", "piano", "robot",
         "star", "moon", "book", "fish", "bird", "door", "lamp", "rain", "snow", "wind", "milk",
         "cake", "road", "ship", "king", "gold", "blue", "red", "hand", "game"]
NAMES = ["Anna", "Ben", "Carla", "David", "Emma", "Farid", "Grace", "Hugo", "Ines", "Jonas",
         "Kira", "Leo", "Mia", "Noah", "Olga", "Pablo", "Rosa", "Sam", "Tara", "Omar"]
SYSTEMS = [None, None, None, "You are a helpful assistant.", "You are a friendly assistant.",
           "Answer briefly."]
SMALLTALK = [
    (["Hello!", "Hi!", "Hello", "Hi there!", "Hey!", "Good morning!"],
     ["Hello! How can I help you today?", "Hi! What can I do for you?"]),
    (["How are you?", "How are you doing?", "How is it going?"],
     ["I am doing well, thank you. How can I help you?"]),
    (["What is your name?", "Who are you?", "What are you?"],
     ["I am a small demo model trained for qwenrt. I can do simple arithmetic, name capitals, "
      "spell words backwards, answer in JSON and call tools."]),
    (["Thank you!", "Thanks!", "Thanks a lot.", "Thank you very much."],
     ["You're welcome!", "You are welcome! Anything else?"]),
    (["Goodbye!", "Bye!", "See you later."], ["Goodbye! Have a nice day."]),
    (["What can you do?", "Can you help me?"],
     ["I can add, subtract and multiply small numbers, tell you the capital of a country, spell a "
      "word backwards, reply in JSON and use the get_weather and calculator tools."]),
    (["Tell me a joke.", "Say something funny."],
     ["Why did the robot go on holiday? It needed to recharge its batteries."]),
]

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The name of the city."}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "calculator", "description": "Evaluate an arithmetic expression.",
        "parameters": {"type": "object", "properties": {
            "expression": {"type": "string", "description": "The expression, for example 12 * 7."}},
            "required": ["expression"]}}},
]

ARITH_Q = ["What is {a} {op} {b}?", "What's {a} {op} {b}?", "Compute {a} {op} {b}.",
           "How much is {a} {op} {b}?", "Calculate {a} {op} {b}.", "{a} {op} {b} = ?"]
CAPITAL_Q = ["What is the capital of {c}?", "What's the capital of {c}?",
             "Which city is the capital of {c}?", "Name the capital of {c}.",
             "Tell me the capital of {c}.", "capital of {c}?"]
WEATHER_Q = ["What is the weather in {city}?", "What's the weather like in {city}?",
             "How is the weather in {city} today?", "Is it sunny in {city}?",
             "Check the weather in {city}."]
CALC_Q = ["Use the calculator to compute {e}.", "Please calculate {e} with the calculator.",
          "What is {e}? Use the tool.", "Calculate {e}."]
REVERSE_Q = ["Spell {w} backwards.", "Spell the word {w} backwards.", "Reverse the word {w}.",
             "How do you spell {w} backwards?"]
JSON_PERSON_Q = ["Reply in JSON with keys name and age: {n} is {a} years old.",
                 "My name is {n} and I am {a}. Reply in JSON with keys name and age.",
                 "Give me JSON with keys name and age for {n}, age {a}."]
JSON_CAPITAL_Q = ["Reply in JSON with keys country and capital: what is the capital of {c}?",
                  "What is the capital of {c}? Answer in JSON with keys country and capital."]
OPS = {"plus": lambda a, b: a + b, "minus": lambda a, b: a - b, "times": lambda a, b: a * b}


# Share of arithmetic answers that carry their written working as reasoning (a <think> block
# when the turn is rendered with thinking); the rest answer directly, so both modes are learned.
REASONING_ARITH = 0.75
# Share of conversations that offer the two tools.
TOOLS_FRACTION = 0.25


def working(a, op, b):
    """Column arithmetic written out, ones first, one single-digit fact per step: what a small
    model can learn to generalise to problems it never saw (an answer-first sum must carry in its
    head). A product of factors <= 12 walks the smaller factor's row while counting the larger one
    down ('6 times 7: count 7 down, adding 6 each time: 7 gives 6, 6 gives 12, ..., 1 gives 42'):
    every row entry is one other products' workings also write, so a held-out '9 times 9' is a row
    the model has seen continue past it in '9 times 11', not a fact it must have memorised. The
    count runs down rather than up because where a row stops must not be a per-product fact: a row
    counted up ('6 times 7 is 42, 6 times 8 is 48') stops at a factor only the held-out product's
    own working ever stopped at, and run 3's model ran past it; every countdown stops at '1 gives'.
    A product by one digit is done in columns like a sum."""
    c = OPS[op](a, b)
    if op == "times" and a <= 12 and b <= 12:
        lo, hi = min(a, b), max(a, b)
        if lo <= 1:
            steps = f"{lo} times {hi} is {c}."
        else:
            steps = (f"{lo} times {hi}: count {hi} down, adding {lo} each time: "
                     + ", ".join(f"{hi - k + 1} gives {lo * k}" for k in range(1, hi + 1)) + ".")
        return f"{steps} So {a} times {b} is {c}."
    da = [int(d) for d in reversed(str(a))]
    steps, carry = [], 0
    if op == "times":  # b is one digit here (a follow-up "times 2")
        for d in da:
            v = d * b + carry
            expr = f"{d} times {b}" + (f" plus {carry}" if carry else "")
            carry = v // 10
            steps.append(f"{expr} is {v}, write {v % 10}" + (f" carry {carry}" if carry else "") + ".")
        if carry:
            steps.append(f"Then write {carry}.")
    else:
        db = [int(d) for d in reversed(str(b))]
        n = max(len(da), len(db))
        da += [0] * (n - len(da))
        db += [0] * (n - len(db))
        for x, y in zip(da, db):
            if op == "plus":
                v = x + y + carry
                expr = f"{x} plus {y}" + (f" plus {carry}" if carry else "")
                carry = v // 10
                steps.append(f"{expr} is {v}, write {v % 10}" + (f" carry {carry}" if carry else "") + ".")
            else:
                x2 = x - carry
                left = f"{x} minus {carry}" if carry else f"{x}"
                if x2 < y:
                    steps.append(f"{left} minus {y}: borrow, {x2 + 10} minus {y} is {x2 + 10 - y}, write {x2 + 10 - y}.")
                    carry = 1
                else:
                    steps.append(f"{left} minus {y} is {x2 - y}, write {x2 - y}.")
                    carry = 0
        if carry and op == "plus":
            steps.append(f"Then write {carry}.")
    return " ".join(steps) + f" So {a} {op} {b} is {c}."


def held_out(key, frac):
    """Deterministic split by key: True for about `frac` of the keys."""
    h = int(hashlib.sha256(repr(key).encode()).hexdigest()[:8], 16)
    return (h % 10000) < frac * 10000


class Gen:
    """One generator per split; draw() returns (family, messages, tools, expected)."""

    def __init__(self, seed, split, frac=0.1):
        self.r = random.Random(seed)
        self.split = split  # "train" or "test"
        self.frac = frac

    def want(self, key):
        return held_out(key, self.frac) == (self.split == "test")

    def pick(self, make):
        """Draws make(r) -> (key, value) until the key belongs to this split."""
        for _ in range(1000):
            key, val = make(self.r)
            if self.want(key):
                return val
        raise RuntimeError("no key for this split")

    # --- families, each returns (user text, assistant message dict, expected, state) ------------
    def arith(self):
        def make(r):
            op = r.choice(["plus", "plus", "minus", "times"])
            if op == "times":
                a, b = r.randint(0, 12), r.randint(0, 12)
            elif op == "minus":
                a = r.randint(0, 99)
                b = r.randint(0, a)
            else:
                a = r.randint(0, 99)
                b = r.randint(0, 99 - a if r.random() < 0.7 else 99)
            q = r.randrange(len(ARITH_Q))
            return (op, a, b), (op, a, b, q)
        op, a, b, q = self.pick(make)
        c = OPS[op](a, b)
        ans = f"{a} {op} {b} is {c}."
        msg = {"role": "assistant", "content": ans}
        if self.r.random() < REASONING_ARITH:
            msg["reasoning_content"] = working(a, op, b)
        return ARITH_Q[q].format(a=a, op=op, b=b), msg, {"number": c}, ("num", c)

    def followup_arith(self, prev):
        c0 = prev[1]
        for _ in range(100):
            op = self.r.choice(["plus", "minus", "times"])
            b = self.r.randint(1, 9) if op != "times" else self.r.randint(2, 3)
            c = OPS[op](c0, b)
            if 0 <= c <= 999:
                break
        user = self.r.choice([f"And {op} {b}?", f"Now {op} {b}.", f"And what if I {op} {b}?"])
        msg = {"role": "assistant", "content": f"{c0} {op} {b} is {c}."}
        if self.r.random() < REASONING_ARITH:
            msg["reasoning_content"] = f"The previous result is {c0}. " + working(c0, op, b)
        return user, msg, {"number": c}, ("num", c)

    def capital(self):
        def make(r):
            i = r.randrange(len(CAPITALS))
            q = r.randrange(len(CAPITAL_Q))
            return (CAPITALS[i][0], q), (i, q)
        i, q = self.pick(make)
        c, cap = CAPITALS[i]
        msg = {"role": "assistant", "content": f"The capital of {c} is {cap}."}
        if self.r.random() < 0.25:
            msg["reasoning_content"] = f"The user wants the capital of {c}. It is {cap}."
        return CAPITAL_Q[q].format(c=c), msg, {"capital": cap}, ("cap", i)

    def followup_capital(self, prev):
        i = self.r.randrange(len(CAPITALS))
        c, cap = CAPITALS[i]
        user = self.r.choice([f"And of {c}?", f"What about {c}?", f"And {c}?"])
        return user, {"role": "assistant", "content": f"The capital of {c} is {cap}."}, \
            {"capital": cap}, ("cap", i)

    def reverse(self):
        def make(r):
            w = r.choice(WORDS)
            q = r.randrange(len(REVERSE_Q))
            return (w, q), (w, q)
        w, q = self.pick(make)
        fwd, back = "-".join(w), "-".join(reversed(w))
        ans = f"{w} is spelled {fwd}. Backwards: {back}."
        return REVERSE_Q[q].format(w=w), {"role": "assistant", "content": ans}, {"text": back}, None

    def smalltalk(self):
        qs, ans = self.r.choice(SMALLTALK)
        return self.r.choice(qs), {"role": "assistant", "content": self.r.choice(ans)}, \
            {"any": ans}, None

    def json_answer(self):
        if self.r.random() < 0.6:
            def make(r):
                n, a, q = r.choice(NAMES), r.randint(18, 90), r.randrange(len(JSON_PERSON_Q))
                return (n, a, q), (n, a, q)
            n, a, q = self.pick(make)
            obj = {"name": n, "age": a}
            user = JSON_PERSON_Q[q].format(n=n, a=a)
        else:
            def make(r):
                i, q = r.randrange(len(CAPITALS)), r.randrange(len(JSON_CAPITAL_Q))
                return ("json", i, q), (i, q)
            i, q = self.pick(make)
            obj = {"country": CAPITALS[i][0], "capital": CAPITALS[i][1]}
            user = JSON_CAPITAL_Q[q].format(c=CAPITALS[i][0])
        return user, {"role": "assistant", "content": json.dumps(obj)}, {"json": obj}, None

    def tool_turns(self):
        """User question, assistant tool call, tool result, final answer: 3 messages after user."""
        if self.r.random() < 0.6:
            def make(r):
                city, q = r.choice(CITIES), r.randrange(len(WEATHER_Q))
                return (city, q), (city, q)
            city, q = self.pick(make)
            t, cond = self.r.randint(-5, 35), self.r.choice(CONDITIONS)
            call = {"name": "get_weather", "arguments": {"city": city}}
            result = json.dumps({"city": city, "temperature": t, "condition": cond})
            final = f"It is {t} degrees and {cond} in {city}."
            user = WEATHER_Q[q].format(city=city)
        else:
            def make(r):
                a, b = r.randint(2, 999), r.randint(2, 999)
                op = r.choice(["+", "-", "*"])
                q = r.randrange(len(CALC_Q))
                return (a, op, b, q), (a, op, b, q)
            a, op, b, q = self.pick(make)
            e = f"{a} {op} {b}"
            v = eval(e)  # noqa: S307 (our own integers)
            call = {"name": "calculator", "arguments": {"expression": e}}
            result = str(v)
            final = f"{e} = {v}."
            user = CALC_Q[q].format(e=e)
        msgs = [{"role": "assistant", "content": "",
                 "tool_calls": [{"type": "function", "function": call}]},
                {"role": "tool", "content": result},
                {"role": "assistant", "content": final}]
        return user, msgs, {"call": call, "final": final}

    def conversation(self):
        """(family of the last user turn, messages, tools, expected for the last answer)."""
        r = self.r
        msgs = []
        sysm = r.choice(SYSTEMS)
        tools = TOOLS if r.random() < TOOLS_FRACTION else None
        if sysm:
            msgs.append({"role": "system", "content": sysm})
        n_turns = r.choice([1, 2, 2, 3, 3])
        fam, exp, state = None, None, None
        for t in range(n_turns):
            last = t == n_turns - 1
            choices = ["arith", "capital", "reverse", "smalltalk", "json"]
            weights = [4, 3, 2, 1, 2]
            if tools:
                choices.append("tool")
                weights.append(6)
            if state is not None:
                choices.append("followup")
                weights.append(4)
            fam = r.choices(choices, weights)[0]
            if fam == "tool":
                user, amsgs, exp = self.tool_turns()
                msgs.append({"role": "user", "content": user})
                msgs.extend(amsgs)
                state = None
                continue
            if fam == "followup":
                f = self.followup_arith if state[0] == "num" else self.followup_capital
                fam = "followup_" + ("arith" if state[0] == "num" else "capital")
                user, amsg, exp, state = f(state)
            else:
                user, amsg, exp, state = getattr(self, {"json": "json_answer"}.get(fam, fam))()
            msgs.append({"role": "user", "content": user})
            msgs.append(amsg)
        return fam, msgs, tools, exp


def compile_template(template_text):
    """The jinja environment transformers uses for chat templates (its tojson, loop controls)."""
    from transformers.utils.chat_template_utils import _compile_jinja_template
    return _compile_jinja_template(template_text)


def render(tmpl, msgs, tools, add_generation_prompt=False, enable_thinking=None):
    kw = {"messages": msgs, "tools": tools, "add_generation_prompt": add_generation_prompt}
    if enable_thinking is not None:
        kw["enable_thinking"] = enable_thinking
    return tmpl.render(**kw)


def make_split(seed, split, n):
    g = Gen(seed, split)
    return [g.conversation() for _ in range(n)]


def eval_prompts(seed, n_per_family):
    """Held-out prompts per family for greedy evaluation: (family, messages-without-answer, tools,
    expected). Tool prompts always carry the tools; the answer to check is the last turn."""
    g = Gen(seed, "test")
    out = []
    fams = {"arith": g.arith, "capital": g.capital, "reverse": g.reverse, "json": g.json_answer}
    for fam, f in fams.items():
        for _ in range(n_per_family):
            user, amsg, exp, _ = f()
            out.append((fam, [{"role": "user", "content": user}], None, exp))
    for _ in range(n_per_family):
        user, amsgs, exp = g.tool_turns()
        out.append(("tool_call", [{"role": "user", "content": user}], TOOLS, exp))
        # the final answer after the tool result
        out.append(("tool_answer", [{"role": "user", "content": user}] + amsgs[:2], TOOLS,
                    {"text": exp["final"]}))
    for _ in range(n_per_family):
        user, amsg, exp, st = g.arith()
        u2, a2, exp2, _ = g.followup_arith(st)
        out.append(("followup", [{"role": "user", "content": user}, amsg,
                                 {"role": "user", "content": u2}], None, exp2))
    return out
