#!/usr/bin/python3
"""Stands in for llama-server in llama.cpp's server tests (LLAMA_SERVER_BIN_PATH). It parses the
argv the suite gives llama-server, maps the suite's Hugging Face model to the local file
(suite_models.py) and then, by CONFORMANCE_MODE:
  direct: execs the real llama-server (CONFORMANCE_SERVER) with --model LOCAL instead;
  door:   writes a one-profile kevlaya configuration from the same arguments and execs
          `kevlaya-orch serve` (CONFORMANCE_DOOR) in its place, as a user moving to the door would.
The door settings replace llama-server's where the door documents one (listen, api_keys, cors,
alias, tags, slot files, tools); every other argument reaches the child unchanged in extra_args.
Where llama-server's default differs from the door's, the default is written out: no
--cors-origins is `cors: ["*"]` (["localhost"] with --tools), as llama-server answers then.
Nothing here hides a difference: that is what the runner is for. Without a model (llama-server's
router mode) the door stands in with no profile."""
import os
import sys
import tempfile

import suite_models

# llama-server flags the suite passes with a value (utils.py, ServerProcess.start); others are bare.
VALUE_FLAGS = {
    "--host", "--port", "--temp", "--seed", "--model", "-m", "--model-url", "--model-draft",
    "--hf-repo", "--hf-file", "-hf", "--models-dir", "--models-max", "--models-preset",
    "--cors-origins", "--batch-size", "--ubatch-size", "--threads", "--n-gpu-layers", "--pooling",
    "--alias", "--tags", "--ctx-size", "--parallel", "-ctk", "-ctv", "-fa", "--n-predict",
    "--slot-save-path", "--grp-attn-n", "--grp-attn-w", "--lora", "--spec-type", "--api-key",
    "--spec-draft-n-max", "--spec-draft-n-min", "--reasoning-format", "--reasoning",
    "--chat-template", "--chat-template-file", "--mmproj-url", "--media-path",
    "--sleep-idle-seconds", "--cache-ram", "--tools", "--mcp-servers-config", "--mcp-servers-json",
}
# Flags whose value is a path the suite writes relative to its folder; the door's child runs
# elsewhere, so they are made absolute (the configuration's own rule for paths).
PATH_FLAGS = {"--chat-template-file", "--media-path", "--lora", "--model-draft",
              "--mcp-servers-config", "--models-dir", "--models-preset"}
MODEL_FLAGS = {"--model", "-m", "--model-url", "--hf-repo", "-hf", "--hf-file"}


def die(msg):
    print(f"conformance shim: {msg}", file=sys.stderr, flush=True)
    sys.exit(3)


def parse(argv):
    """[(flag, value or None)] in order."""
    out, i = [], 0
    while i < len(argv):
        flag = argv[i]
        if flag in VALUE_FLAGS:
            if i + 1 >= len(argv):
                die(f"{flag} without a value")
            out.append((flag, argv[i + 1]))
            i += 2
        else:
            out.append((flag, None))
            i += 1
    return out


def model_of(args):
    """(local path or None, what was asked for) from the model flags."""
    got = {f: v for f, v in args if f in MODEL_FLAGS}
    return suite_models.resolve(os.environ["CONFORMANCE_MODELS"],
                                got.get("--hf-repo") or got.get("-hf"), got.get("--hf-file"),
                                got.get("--model") or got.get("-m"), got.get("--model-url"))


def flatten(args):
    return [x for f, v in args for x in ((f,) if v is None else (f, v))]


def yaml_str(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def profile_name(alias, model):
    """llama-server's model id: the first of its --alias names in sorted order (std::set)."""
    names = sorted(a for a in (alias or "").split(",") if a)
    raw = names[0] if names else os.path.basename(model).rsplit(".gguf", 1)[0]
    name = "".join(c if c.isalnum() or c in "._-" else "-" for c in raw).lstrip("._-")
    return name or "model"


def door_config(args, model, work):
    """Writes work/kevlaya.yaml and work/profiles/NAME.yaml; returns the config's path."""
    door = {"--host": "127.0.0.1", "--port": "8080"}
    profile, extra = {}, []
    keys = {"--ctx-size": "ctx", "--parallel": "parallel", "--batch-size": "batch",
            "--n-gpu-layers": "ngl", "-ctk": "cache_type_k", "-ctv": "cache_type_v"}
    for flag, value in args:
        if flag in MODEL_FLAGS or flag == "--offline":
            continue  # the model is the local file; nothing is downloaded
        if flag in ("--host", "--port", "--api-key", "--cors-origins", "--alias", "--tags"):
            door[flag] = value
        elif flag in ("--tools", "--mcp-servers-config", "--mcp-servers-json"):
            if flag == "--mcp-servers-config" and os.path.exists(value):
                value = os.path.abspath(value)
            door[flag] = value  # the door's tools host (tools: in kevlaya.yaml)
        elif flag == "--slot-save-path":
            profile["slot_cache.enabled"] = True  # the door's own slot folder replaces it
        elif flag in keys:
            profile[keys[flag]] = value
        elif flag == "-fa" and value in ("on", "off"):
            profile["flash_attn"] = value == "on"
        else:
            if flag in PATH_FLAGS and value is not None and os.path.exists(value):
                value = os.path.abspath(value)
            extra.append((flag, value))
    os.makedirs(os.path.join(work, "profiles"))
    if model is None:  # llama.cpp's router mode: the door with no profile stands in
        return write_door(work, door, None, extra)
    name = profile_name(door.get("--alias"), model)
    lines = [f"name: {yaml_str(name)}", "backend: llama-server",
             f"binary: {yaml_str(os.environ['CONFORMANCE_SERVER'])}", f"model: {yaml_str(model)}"]
    aliases = [a for a in (door.get("--alias") or "").split(",") if a and a != name]
    if aliases:
        lines.append("alias: [" + ", ".join(yaml_str(a) for a in aliases) + "]")
    tags = [t for t in (door.get("--tags") or "").split(",") if t]
    if tags:
        lines.append("tags: [" + ", ".join(yaml_str(t) for t in tags) + "]")
    for key, value in profile.items():
        if key == "slot_cache.enabled":
            lines.append("slot_cache:\n  enabled: true")
        else:
            lines.append(f"{key}: {str(value).lower() if isinstance(value, bool) else value}")
    lines.append("extra_args: [" + ", ".join(yaml_str(x) for x in flatten(extra)) + "]")
    with open(os.path.join(work, "profiles", name + ".yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return write_door(work, door, name, [])


def write_door(work, door, name, dropped):
    """Writes work/kevlaya.yaml (preloading profile NAME when there is one); returns its path."""
    if dropped:
        print(f"conformance shim: no profile to pass {flatten(dropped)} to", file=sys.stderr)
    cfg = ["profiles_dir: profiles", "state_dir: state", "log_dir: log",
           f"listen:\n  host: {yaml_str(door['--host'])}\n  port: {door['--port']}",
           f"preload: [{yaml_str(name)}]" if name else "preload: []"]
    if door.get("--api-key"):
        cfg.append(f"api_keys: [{yaml_str(door['--api-key'])}]")
    tools = {"--tools": "builtin", "--mcp-servers-config": "mcp_servers", "--mcp-servers-json": "mcp_servers_json"}
    if any(door.get(f) for f in tools):
        cfg.append("tools:\n  binary: " + yaml_str(os.environ["CONFORMANCE_SERVER"]) + "".join(
            f"\n  {key}: {yaml_str(door[f])}" for f, key in tools.items() if door.get(f)))
    if door.get("--cors-origins"):
        origins = [o.strip() for o in door["--cors-origins"].split(",") if o.strip()]
    else:  # llama-server's defaults: loopback origins with tools on, else any origin
        origins = ["localhost"] if door.get("--tools") else ["*"]
    cfg.append("cors:\n  allowed_origins: [" + ", ".join(yaml_str(o) for o in origins) + "]")
    path = os.path.join(work, "kevlaya.yaml")
    with open(path, "w") as f:
        f.write("\n".join(cfg) + "\n")
    return path


def main():
    args = parse(sys.argv[1:])
    mode = os.environ.get("CONFORMANCE_MODE", "direct")
    model, asked = model_of(args)
    if asked is not None and model is None:
        die(f"model absent from {os.environ['CONFORMANCE_MODELS']}: {asked}")
    if mode == "direct":
        rest = [(f, v) for f, v in args if f not in MODEL_FLAGS]
        argv = flatten(([("--model", model)] if model else []) + rest)
        server = os.environ["CONFORMANCE_SERVER"]
        os.execv(server, [server, *argv])
    work = tempfile.mkdtemp(prefix="door-", dir=os.environ.get("CONFORMANCE_WORK"))
    config = door_config(args, model, work)
    for name in ["kevlaya.yaml"] + ["profiles/" + p for p in os.listdir(os.path.join(work, "profiles"))]:
        with open(os.path.join(work, name)) as f:
            print(f"conformance shim: {name}:\n{f.read()}", file=sys.stderr, flush=True)
    os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    door = os.environ["CONFORMANCE_DOOR"]
    # llama-server prints its log on its own output, where the suite reads it: the door echoes its
    # children's lines there too (serve --child-output).
    os.execv(door, [door, "serve", config, "--child-output"])


if __name__ == "__main__":
    main()
