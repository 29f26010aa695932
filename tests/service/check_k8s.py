#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Validates deploy/k8s/*.yaml offline, without a cluster.

Debian 12 packages no Kubernetes schema validator (no kubeconform, no kubeval; kubectl's
validation asks an API server). It does package the official Python client
(python3-kubernetes), whose model classes are generated from the Kubernetes OpenAPI schema:
every object's fields, their types and which are required. This walks each manifest against
those models (unknown field, wrong type, missing required field: an error), then checks what
a schema cannot: labels match selectors, every mount names a volume, config files and keys
named by the pods exist, the lode-fuse DaemonSet is privileged with Bidirectional
propagation of /models, the inference pod mounts /models read-only. The config files in the
ConfigMap are handed to the real daemons (--config FILE --version), which refuse a bad key or
value. Usage: check_k8s.py DIR (meson sets LODE_MDS_BIN, LODE_OSS_BIN, LODE_FUSE).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

DEBIAN_PYTHON = "/usr/bin/python3"
try:
    import yaml
    import kubernetes.client as k8s
except ImportError as e:
    # python3-kubernetes is Debian's, under /usr/lib/python3: another python3 (a venv,
    # pyenv) first in PATH does not see it
    if os.path.exists(DEBIAN_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(
            DEBIAN_PYTHON) and not os.environ.get("LODE_K8S_REEXEC"):
        os.environ["LODE_K8S_REEXEC"] = "1"
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    print(f"SKIP: {e} (packages python3-yaml python3-kubernetes, tools/install-deps.sh)")
    sys.exit(77)

errors = []


def err(where, msg):
    errors.append(f"{where}: {msg}")


# --- schema: the client's models, generated from the Kubernetes OpenAPI schema ---

def model_class(api_version, kind):
    group_version = api_version.split("/")[-1]
    group = api_version.split("/")[0] if "/" in api_version else ""
    prefix = {"": "", "apps": "", "batch": "", "policy": ""}.get(group)
    if prefix is None:
        return None
    return getattr(k8s, group_version.capitalize() + kind, None)


PRIMITIVES = {"str": str, "int": int, "bool": bool, "float": (int, float)}


def check_value(where, value, type_name):
    if value is None:
        return
    if type_name in PRIMITIVES:
        want = PRIMITIVES[type_name]
        if type_name == "int" and isinstance(value, bool) or not isinstance(value, want):
            err(where, f"expected {type_name}, found {type(value).__name__} {value!r}")
        return
    if type_name == "object":  # IntOrString, RawExtension: anything goes
        return
    if type_name == "datetime":
        return
    m = re.fullmatch(r"list\[(.+)\]", type_name)
    if m:
        if not isinstance(value, list):
            err(where, f"expected a list, found {value!r}")
            return
        for i, item in enumerate(value):
            check_value(f"{where}[{i}]", item, m.group(1))
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if m:
        if not isinstance(value, dict):
            err(where, f"expected a map, found {value!r}")
            return
        for key, item in value.items():
            check_value(f"{where}.{key}", item, m.group(1))
        return
    cls = getattr(k8s, type_name, None)
    if cls is None:
        err(where, f"no model {type_name} in the client")
        return
    check_object(where, value, cls)


def check_object(where, obj, cls):
    if not isinstance(obj, dict):
        err(where, f"expected a {cls.__name__} map, found {obj!r}")
        return
    by_json = {json: attr for attr, json in cls.attribute_map.items()}
    for key, value in obj.items():
        if key not in by_json:
            err(where, f"unknown field '{key}' in {cls.__name__}")
            continue
        check_value(f"{where}.{key}", value, cls.openapi_types[by_json[key]])
    # required fields: the model's constructor refuses None for them
    try:
        k8s.ApiClient()._ApiClient__deserialize(obj, cls.__name__)
    except (ValueError, TypeError) as e:
        err(where, f"{cls.__name__}: {e}")


# --- the manifests ---

def load(directory):
    docs = []
    files = sorted(glob.glob(os.path.join(directory, "*.yaml")))
    if not files:
        err(directory, "no manifests")
    for path in files:
        with open(path) as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc is not None:
                    docs.append((f"{os.path.basename(path)}#{i}", doc))
    return docs


def pod_spec(doc):
    if doc["kind"] == "Pod":
        return doc.get("metadata", {}).get("labels", {}), doc["spec"]
    template = doc["spec"]["template"]
    return template.get("metadata", {}).get("labels", {}), template["spec"]


def config_files(docs):
    """{(namespace, ConfigMap name): data}"""
    return {(d["metadata"].get("namespace", "default"), d["metadata"]["name"]): d.get("data", {})
            for _, d in docs if d["kind"] == "ConfigMap"}


def check_pod(where, doc, ns, docs, maps):
    labels, spec = pod_spec(doc)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    claims = {c["metadata"]["name"] for c in doc["spec"].get("volumeClaimTemplates", [])} \
        if doc["kind"] == "StatefulSet" else set()
    if doc["kind"] != "Pod":
        selector = doc["spec"]["selector"].get("matchLabels", {})
        if not selector:
            err(where, "no matchLabels in the selector")
        for k, v in selector.items():
            if labels.get(k) != v:
                err(where, f"selector {k}={v} does not match the pod template's labels")
    for name, v in volumes.items():
        if "configMap" in v:
            cm = v["configMap"]["name"]
            if (ns, cm) not in maps:
                err(where, f"volume {name}: no ConfigMap {cm} in namespace {ns}")
        if "secret" in v:
            secret = v["secret"]["secretName"]
            defined = any(d["kind"] == "Secret" and d["metadata"]["name"] == secret
                          for _, d in docs)
            if not defined and not v["secret"].get("optional"):
                err(where, f"volume {name}: Secret {secret} is neither defined nor optional")
            if v["secret"].get("defaultMode", 0o644) & 0o077:
                err(where, f"volume {name}: a key file readable by others (mode "
                    f"{v['secret'].get('defaultMode', 0o644):o}); want 0600")
    for c in spec["containers"]:
        cwhere = f"{where} container {c['name']}"
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes and m["name"] not in claims:
                err(cwhere, f"mounts {m['name']}, which is no volume of the pod")
        command = " ".join(c.get("command", []) + c.get("args", []))
        for path in re.findall(r"--config[ =](\S+)", command):
            mount = next((m for m in c.get("volumeMounts", []) if m["mountPath"] == path), None)
            if not mount or "configMap" not in volumes.get(mount["name"], {}):
                err(cwhere, f"--config {path}: no ConfigMap file mounted there")
                continue
            cm = volumes[mount["name"]]["configMap"]["name"]
            key = mount.get("subPath")
            if key not in maps.get((ns, cm), {}):
                err(cwhere, f"--config {path}: ConfigMap {cm} has no key {key}")
    return labels, spec


def check_lode_rules(docs):
    named = {(d["kind"], d["metadata"]["name"]): (w, d) for w, d in docs}
    need = [("StatefulSet", "lode-mds"), ("Service", "lode-mds"), ("DaemonSet", "lode-fuse"),
            ("Pod", "inference-example"), ("ConfigMap", "lode-config")]
    for key in need:
        if key not in named:
            err("deploy/k8s", f"no {key[0]} {key[1]}")
    if ("StatefulSet", "lode-oss") not in named and ("DaemonSet", "lode-oss") not in named:
        err("deploy/k8s", "no StatefulSet or DaemonSet lode-oss")
    if any(k not in named for k in need):
        return
    w, mds = named[("StatefulSet", "lode-mds")]
    if not mds["spec"].get("volumeClaimTemplates"):
        err(w, "the MDS has no persistent volume (volumeClaimTemplates)")
    svc = mds["spec"]["serviceName"]
    if ("Service", svc) not in named:
        err(w, f"serviceName {svc} names no Service")
    w, fuse = named[("DaemonSet", "lode-fuse")]
    _, spec = pod_spec(fuse)
    c = spec["containers"][0]
    if not c.get("securityContext", {}).get("privileged"):
        err(w, "lode-fuse's container is not privileged (FUSE, Bidirectional propagation)")
    models = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/models"]
    if not models or models[0].get("mountPropagation") != "Bidirectional":
        err(w, "lode-fuse does not mount /models with Bidirectional propagation")
    elif spec_volume(spec, models[0]["name"]).get("hostPath", {}).get("path") != "/models":
        err(w, "lode-fuse's /models is not the host's /models")
    if not any(m["mountPath"] == "/dev/fuse" for m in c.get("volumeMounts", [])):
        err(w, "lode-fuse has no /dev/fuse")
    w, pod = named[("Pod", "inference-example")]
    for c in pod["spec"]["containers"]:
        for m in c.get("volumeMounts", []):
            if m["mountPath"] == "/models":
                if not m.get("readOnly"):
                    err(w, "the inference pod mounts /models writable")
                if m.get("mountPropagation") != "HostToContainer":
                    err(w, "the inference pod does not see a remount (want HostToContainer)")


def spec_volume(spec, name):
    return next((v for v in spec.get("volumes", []) if v["name"] == name), {})


def check_services(docs):
    pods = []
    for w, d in docs:
        if d["kind"] in ("Pod", "StatefulSet", "DaemonSet", "Deployment"):
            labels, spec = pod_spec(d)
            pods.append((d["metadata"].get("namespace", "default"), labels, spec))
    for w, d in docs:
        if d["kind"] != "Service":
            continue
        ns = d["metadata"].get("namespace", "default")
        sel = d["spec"].get("selector", {})
        hits = [(labels, spec) for pns, labels, spec in pods
                if pns == ns and all(labels.get(k) == v for k, v in sel.items())]
        if not hits:
            err(w, f"selector {sel} selects no pod")
            continue
        for p in d["spec"]["ports"]:
            target = p.get("targetPort", p["port"])
            ok = any(target in (cp.get("name"), cp["containerPort"])
                     for _, spec in hits for c in spec["containers"] for cp in c.get("ports", []))
            if not ok:
                err(w, f"targetPort {target} is no port of the selected pods")


def check_configs(docs, maps):
    """The ConfigMap's files, read by the real daemons."""
    progs = {"mds.conf": [os.environ.get("LODE_MDS_BIN")],
             # the MDS's DNS name does not resolve here: the command line overrides it
             "oss.conf": [os.environ.get("LODE_OSS_BIN"), "--mds", "tcp://127.0.0.1:9400",
                          "--advertise", "tcp://127.0.0.1:9500"],
             "fuse.conf": [os.environ.get("LODE_FUSE")]}
    with tempfile.TemporaryDirectory() as tmp:
        for (ns, name), data in maps.items():
            for key, text in data.items():
                argv = progs.get(key)
                if not argv or not argv[0]:
                    print(f"not checked by a daemon: {ns}/{name} {key}")
                    continue
                path = os.path.join(tmp, key)
                with open(path, "w") as f:
                    f.write(text)
                r = subprocess.run([argv[0], "--config", path] + argv[1:] + ["--version"],
                                   capture_output=True, text=True, timeout=30)
                if r.returncode != 0:
                    err(f"ConfigMap {name} {key}", r.stderr.strip() or f"exit {r.returncode}")
                else:
                    print(f"{os.path.basename(argv[0])} accepts ConfigMap {name} {key}")


def validate(docs, run_daemons):
    errors.clear()
    for where, doc in docs:
        for field in ("apiVersion", "kind", "metadata"):
            if field not in doc:
                err(where, f"no {field}")
        if errors:
            continue
        cls = model_class(doc["apiVersion"], doc["kind"])
        if cls is None:
            err(where, f"unknown apiVersion/kind {doc['apiVersion']} {doc['kind']}")
            continue
        check_object(f"{where} {doc['kind']} {doc['metadata'].get('name')}", doc, cls)
    if errors:
        return list(errors)
    maps = config_files(docs)
    for where, doc in docs:
        if doc["kind"] in ("Pod", "StatefulSet", "DaemonSet", "Deployment"):
            check_pod(f"{where} {doc['kind']} {doc['metadata']['name']}", doc,
                      doc["metadata"].get("namespace", "default"), docs, maps)
    check_services(docs)
    check_lode_rules(docs)
    if run_daemons:
        check_configs(docs, maps)
    return list(errors)


def find(docs, kind, name):
    return next(d for _, d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def fuse_container(docs):
    return find(docs, "DaemonSet", "lode-fuse")["spec"]["template"]["spec"]["containers"][0]


def mds_container(docs):
    return find(docs, "StatefulSet", "lode-mds")["spec"]["template"]["spec"]["containers"][0]


# Mistakes the check must catch: (what, change to the manifests, a word of the error).
MISTAKES = [
    ("a misspelt field", lambda d: mds_container(d).update(volumeMount=[]), "unknown field"),
    ("a wrong type", lambda d: find(d, "StatefulSet", "lode-mds")["spec"].update(replicas="1"),
     "expected int"),
    ("a container without a name", lambda d: mds_container(d).pop("name"), "must not be `None`"),
    ("an unknown kind", lambda d: find(d, "Pod", "inference-example").update(kind="Pood"),
     "unknown apiVersion/kind"),
    ("a selector the template lacks",
     lambda d: find(d, "DaemonSet", "lode-fuse")["spec"]["selector"]["matchLabels"].update(
         tier="x"), "does not match"),
    ("a mount of no volume", lambda d: mds_container(d)["volumeMounts"].append(
        {"name": "nothing", "mountPath": "/x"}), "no volume of the pod"),
    ("a Service selecting nothing",
     lambda d: find(d, "Service", "lode-mds")["spec"]["selector"].update(
         {"app.kubernetes.io/name": "lode-mdx"}), "selects no pod"),
    ("a config file not in the ConfigMap",
     lambda d: find(d, "ConfigMap", "lode-config")["data"].pop("mds.conf"), "has no key"),
    ("lode-fuse unprivileged", lambda d: fuse_container(d).pop("securityContext"),
     "not privileged"),
    ("no Bidirectional propagation",
     lambda d: [m.pop("mountPropagation", None) for m in fuse_container(d)["volumeMounts"]],
     "Bidirectional"),
    ("a writable /models in the inference pod",
     lambda d: [m.pop("readOnly", None) for m in
                find(d, "Pod", "inference-example")["spec"]["containers"][0]["volumeMounts"]],
     "writable"),
    ("a key file readable by all",
     lambda d: [v["secret"].update(defaultMode=0o644) for v in
                find(d, "StatefulSet", "lode-mds")["spec"]["template"]["spec"]["volumes"]
                if "secret" in v], "want 0600"),
    ("a bad key in a config file",
     lambda d: find(d, "ConfigMap", "lode-config")["data"].update(
         {"mds.conf": "data = /x\nthread = 2\n"}), "unknown key 'thread'"),
]


def main():
    directory = sys.argv[1]
    docs = load(directory)
    problems = validate(docs, True)
    for e in problems:
        print("FAIL:", e)
    if problems:
        return 1
    print(f"{len(docs)} objects valid against the schema of python3-kubernetes "
          f"{getattr(k8s, '__version__', '')}")
    # and the check is able to fail: each mistake, made in a copy, must be found
    import copy
    missed = 0
    for what, change, word in MISTAKES:
        bad = copy.deepcopy(docs)
        change(bad)
        found = validate(bad, word.startswith("unknown key"))
        if not any(word in e for e in found):
            print(f"FAIL: {what} was not caught (found: {found})")
            missed += 1
        else:
            print(f"caught {what}: {next(e for e in found if word in e)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
