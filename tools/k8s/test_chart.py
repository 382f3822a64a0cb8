#!/usr/bin/env python3
"""tools/k8s/chart and tools/k8s/bare-metal: every manifest renders (render_chart.py, strict) and
parses, kinds, names, probes and selectors agree, and every metric the EPP configurations name is
one a running door exports (a real `kevlaya-orch serve` with a stand-in child is scraped).

Usage: test_chart.py [--orch BUILD/kevlaya-orch --standin BUILD/tools/llama-server-standin
                      --gguf-tool BUILD/tools/kevlaya-tiny-gguf]
Without the binaries the scrape is skipped (exit 4 after the static checks pass).
"""
import argparse
import os
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doorkit  # noqa: E402
import render_chart  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def docs_of(text):
    return [d for d in yaml.safe_load_all(text) if d]


def find(docs, kind, name):
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return hits[0] if hits else None


def engine_specs(epp_config):
    """The metric names the EPP's engine configurations name (label matchers dropped)."""
    names = []
    for p in epp_config.get("plugins", []):
        for ec in (p.get("parameters") or {}).get("engineConfigs", []):
            for key in ("queuedRequestsSpec", "runningRequestsSpec", "kvUsageSpec", "loraSpec", "cacheInfoSpec"):
                if ec.get(key):
                    names.append(ec[key].split("{")[0])
    return names


def check_epp_config(cfg, where, engine_label):
    plugins = {p["name"]: p for p in cfg["plugins"]}
    check(cfg["kind"] == "EndpointPickerConfig", where + ": kind")
    extractors = [p for p in cfg["plugins"] if (p.get("parameters") or {}).get("engineConfigs")]
    if check(len(extractors) == 1, where + ": one metrics extractor with engineConfigs"):
        params = extractors[0]["parameters"]
        check(params["defaultEngine"] == "kevlaya", where + ": defaultEngine kevlaya")
        check(params.get("engineLabelKey", "inference.networking.k8s.io/engine-type") == engine_label,
              where + ": the engine label the pods carry")
    refs = [p["pluginRef"] for prof in cfg["schedulingProfiles"] for p in prof["plugins"]]
    layer = cfg.get("dataLayer") or cfg.get("data") or {}
    for src in layer.get("sources", []):
        refs.append(src["pluginRef"])
        refs += [e["pluginRef"] for e in src.get("extractors", [])]
    for r in refs:
        check(r in plugins, "%s: pluginRef %s names a plugin" % (where, r))
    check("lora-affinity-scorer" in [p["type"] for p in cfg["plugins"]], where + ": resident-model affinity scorer")
    return engine_specs(cfg)


def check_chart(values):
    docs = docs_of(render_chart.render(os.path.join(HERE, "chart", "kevlaya"), values))
    port, label = values["port"], values["engineLabelKey"]
    specs = []
    for node in values["nodes"]:
        name = "kevlaya-node-" + node["name"]
        dep, cm = find(docs, "Deployment", name), find(docs, "ConfigMap", name)
        if not check(dep and cm, name + ": Deployment and ConfigMap"):
            continue
        check(dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate", name + ": one replica, Recreate")
        pod = dep["spec"]["template"]
        c = pod["spec"]["containers"][0]
        check(c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}, name + ": readiness on /readyz")
        check(c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": port}, name + ": liveness on /livez")
        check(c["resources"]["limits"]["nvidia.com/gpu"] == 1, name + ": one GPU")
        check(pod["metadata"]["labels"].get(label) == "kevlaya", name + ": engine label")
        check(pod["metadata"]["labels"].get("kevlaya.io/pool") == node["pool"], name + ": pool label")
        conf = yaml.safe_load(cm["data"]["kevlaya.yaml"])
        check(conf["listen"]["port"] == port, name + ": listens on the probed port")
        items = [i for v in pod["spec"]["volumes"] if "configMap" in v for i in v["configMap"]["items"]]
        for item in items:
            check(item["key"] in cm["data"], name + ": item " + item["key"])
        for m in node["models"]:
            prof = yaml.safe_load(cm["data"].get(m["name"] + ".yaml", "{}"))
            check(prof.get("name") == m["name"], name + ": profile " + m["name"])
    for pool, spec in values["pools"].items():
        pname = "kevlaya-" + pool
        ip = find(docs, "InferencePool", pname)
        if not check(ip, pname + ": InferencePool"):
            continue
        check(ip["spec"]["selector"]["matchLabels"] == {"kevlaya.io/pool": pool}, pname + ": selector")
        check(ip["spec"]["targetPorts"] == [{"number": port}], pname + ": target port")
        epp = ip["spec"]["endpointPickerRef"]
        svc = find(docs, "Service", epp["name"])
        check(svc and svc["spec"]["ports"][0]["port"] == epp["port"]["number"], pname + ": the EPP's Service and port")
        for o in spec["objectives"]:
            obj = find(docs, "InferenceObjective", o["name"])
            check(obj and obj["spec"]["poolRef"]["name"] == pname, pname + ": objective " + o["name"])
        cm = find(docs, "ConfigMap", pname + "-epp")
        if check(cm, pname + ": EPP ConfigMap"):
            specs += check_epp_config(yaml.safe_load(cm["data"]["epp.yaml"]), pname + " EPP", label)
        members = [n for n in values["nodes"] if n["pool"] == pool]
        check(members, pname + ": has node doors")
    kinds = sorted({d["kind"] for d in docs})
    check(kinds == sorted(["ConfigMap", "Deployment", "InferenceObjective", "InferencePool", "NetworkPolicy",
                           "Role", "RoleBinding", "Service", "ServiceAccount"]), "kinds: %s" % kinds)
    return specs


def check_bare_metal():
    d = os.path.join(HERE, "bare-metal")
    with open(os.path.join(d, "endpoints.yaml")) as f:
        eps = yaml.safe_load(f)["endpoints"]
    for ep in eps:
        check(ep["name"] and ep["address"].count(".") == 3 and 0 < int(ep["port"]) < 65536, "endpoint " + str(ep))
        check(isinstance(ep["port"], str), "endpoint %s: port as a string" % ep["name"])
    with open(os.path.join(d, "epp.yaml")) as f:
        cfg = yaml.safe_load(f)
    check(cfg["dataLayer"]["discovery"]["endpoints"]["pluginRef"] in [p["name"] for p in cfg["plugins"]],
          "bare metal: file discovery plugin")
    return check_epp_config(cfg, "bare-metal EPP", "inference.networking.k8s.io/engine-type")


def check_renderer_is_strict():
    for bad in ("{{ .Values.nope }}", "{{ include \"x\" . }}", "{{ range .Values.a }}x", "{{ .Values.a | upper }}"):
        try:
            render_chart.execute(render_chart.parse(render_chart.tokenize(bad))[0], {".": {"Values": {"a": [1]}}})
            failures.append("renderer accepted " + bad)
        except render_chart.TemplateError:
            pass


def scrape_door(args):
    with tempfile.TemporaryDirectory(prefix="kevlaya-chart-") as root:
        gguf = doorkit.write_tiny_gguf(args.gguf_tool, os.path.join(root, "tiny.gguf"))
        door = doorkit.Door(os.path.join(root, "node"), args.orch, args.standin, gguf, ["kev"], load_ms=0)
        try:
            door.wait_up()
            status, _ = doorkit.request(door.port, "POST", "/v1/chat/completions",
                                        {"model": "kev", "max_tokens": 2, "messages": [{"role": "user", "content": "x"}]})
            check(status == 200, "door: a call")
            for path in ("/readyz", "/livez", "/readyz?model=kev"):
                check(doorkit.request(door.port, "GET", path)[0] == 200, "door: GET %s is 200" % path)
            return doorkit.samples(doorkit.request(door.port, "GET", "/metrics")[1])
        finally:
            door.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--orch")
    ap.add_argument("--standin")
    ap.add_argument("--gguf-tool")
    args = ap.parse_args()
    with open(os.path.join(HERE, "chart", "kevlaya", "values.yaml")) as f:
        values = yaml.safe_load(f)
    check_renderer_is_strict()
    specs = check_chart(values) + check_bare_metal()
    check(set(specs) >= {"kevlaya_requests_waiting", "kevlaya_resident_models_info"}, "EPP specs: %s" % specs)
    skipped = not (args.orch and args.standin and args.gguf_tool)
    if not skipped:
        exported = scrape_door(args)
        for name in sorted(set(specs)):
            check(name in exported, "the door exports %s (named in an EPP configuration)" % name)
        lora = exported.get("kevlaya_resident_models_info", [({}, 0)])[0][0]
        check(set(lora) == {"running_lora_adapters", "waiting_lora_adapters", "max_lora"}, "LoRA-info labels: %s" % lora)
        check(lora.get("running_lora_adapters") == "kev", "kev resident after its call: %s" % lora)
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("ok: chart, bare-metal files%s" % ("" if skipped else ", metric names scraped from a door"))
    if skipped:
        print("skipped: the door scrape (give --orch, --standin and --gguf-tool)")
        sys.exit(4)


if __name__ == "__main__":
    main()
