#!/usr/bin/python3
# Renders chat templates the way transformers does (jinja2 sandbox,
# trim_blocks, lstrip_blocks, loopcontrols, raise_exception, tojson without
# ASCII escaping, strftime_now) and writes the golden outputs. With
# --probes PROBES.json OUT.json it renders each probe (a template, inline or
# a file under testdata/) over the first conversation and records its
# output, or the name of the exception jinja2 raises. With --tools
# CASES.json OUT.json it renders each tool-use case (tools, messages with
# tool_calls and tool results, chat_template_kwargs) through every template
# as transformers' apply_chat_template does (a call's JSON arguments passed
# as the dict they encode) and records the output or the exception's name.
# Without tools the variable stays undefined, as llama.cpp leaves it (the
# Hermes tool_use template iterates over tools, so None would raise).
import json, sys, os, datetime
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols
from jinja2.exceptions import TemplateError

FIXED_NOW = datetime.datetime(2026, 12, 1, 5, 30, 0)

def raise_exception(message):
    raise TemplateError(message)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)

def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = strftime_now
    return e

def probes(probe_file, out_file):
    base = os.path.dirname(os.path.abspath(probe_file))
    conv = json.load(open(os.path.join(base, "conversations.json")))[0]
    out = {}
    for p in json.load(open(probe_file)):
        src = p.get("template")
        if src is None:
            src = open(os.path.join(base, p["file"])).read()
        try:
            out[p["name"]] = {"output": env().from_string(src).render(messages=conv["messages"], add_generation_prompt=True)}
        except Exception as e:
            out[p["name"]] = {"raises": type(e).__name__}
    with open(out_file, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")

def main(tmpl_dir, conv_file, out_dir):
    convs = json.load(open(conv_file))
    specials = json.load(open(os.path.join(tmpl_dir, "specials.json")))
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(os.listdir(tmpl_dir)):
        if not name.endswith(".jinja"):
            continue
        model = name[:-len(".jinja")]
        t = env().from_string(open(os.path.join(tmpl_dir, name)).read())
        for c in convs:
            # transformers passes only the special tokens a tokenizer has
            # (special_tokens_map): a missing one is undefined, not None.
            sp = {k: v for k, v in specials[model].items() if v is not None}
            out = t.render(messages=c["messages"], add_generation_prompt=c["add_generation_prompt"], **sp)
            with open(os.path.join(out_dir, f"{model}.{c['name']}.txt"), "w") as f:
                f.write(out)

def tools(case_file, out_file):
    tmpl_dir = os.path.join(os.path.dirname(os.path.abspath(case_file)), "templates")
    specials = json.load(open(os.path.join(tmpl_dir, "specials.json")))
    cases = json.load(open(case_file))
    out = {}
    for name in sorted(os.listdir(tmpl_dir)):
        if not name.endswith(".jinja"):
            continue
        model = name[:-len(".jinja")]
        t = env().from_string(open(os.path.join(tmpl_dir, name)).read())
        sp = {k: v for k, v in specials[model].items() if v is not None}
        for c in cases:
            msgs = []
            for m in c["messages"]:
                m = dict(m)
                if "tool_calls" in m:
                    m["tool_calls"] = [dict(tc, function=dict(tc["function"], arguments=json.loads(tc["function"]["arguments"]))) for tc in m["tool_calls"]]
                msgs.append(m)
            try:
                kw = {"tools": c["tools"]} if "tools" in c else {}
                r = {"output": t.render(messages=msgs, **kw,
                                        add_generation_prompt=c["add_generation_prompt"], **sp, **c.get("kwargs", {}))}
            except Exception as e:
                r = {"raises": type(e).__name__ + ": " + str(e)}
            out[model + "." + c["name"]] = r
    with open(out_file, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")

if __name__ == "__main__":
    if sys.argv[1] == "--probes":
        probes(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--tools":
        tools(sys.argv[2], sys.argv[3])
    else:
        main(*sys.argv[1:4])
