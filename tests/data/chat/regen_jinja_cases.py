#!/usr/bin/env python3
"""Re-records the expectations in jinja-cases.json with Python Jinja2, configured as Hugging Face's
apply_chat_template configures it. To add a case, append an entry with a `template` and a
`context` (snippets: the name of one of `contexts`; template_cases: the context object itself), then
run:  python3 regen_jinja_cases.py jinja-cases.json
Expectations: `rendered` (exact text), `error` (raise_exception text, exact) or `error_contains`
(Jinja2's message for other errors; ours adds the line/column in front)."""
import json
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception


def render(src, ctx):
    try:
        return {"rendered": env.from_string(src).render(**ctx)}
    except jinja2.exceptions.TemplateError as e:
        if type(e) is jinja2.exceptions.TemplateError:
            return {"error": str(e)}
        return {"error_contains": str(e)}
    except Exception as e:  # TypeError, ValueError, ... raised while rendering
        return {"error_contains": str(e)}


def update(case, result):
    for k in ("rendered", "error", "error_contains"):
        case.pop(k, None)
    case.update(result)


def main(path):
    data = json.load(open(path))
    data["generator"] = ("Python Jinja2 %s, ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, "
                         "loopcontrols), tojson=json.dumps(ensure_ascii=False)" % jinja2.__version__)
    for case in data["snippets"]:
        update(case, render(case["template"], data["contexts"][case["context"]]))
    for case in data["template_cases"]:
        update(case, render(data["templates"][case["template"]], case["context"]))
    json.dump(data, open(path, "w"), ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
