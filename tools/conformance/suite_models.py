"""Maps the models llama.cpp's server tests ask for (Hugging Face repo/file, URL or path) to files in
a local models folder. Shared by the shim (system Python) and the pytest plugin (the suite's Python):
standard library only."""
import os

# Hugging Face (repo, file) -> file name in the models folder, where the generic rule below (the
# file's base name; for a repo without a file, the repo's last part + .gguf) does not find it.
# ggml-org/test-model-stories260K is the same llama2.c stories260K model in a repo of its own.
KNOWN = {
    ("ggml-org/models", "tinyllamas/stories260K.gguf"): "stories260K.gguf",
    ("ggml-org/test-model-stories260K", None): "stories260K.gguf",
}


def candidates(hf_repo, hf_file):
    """File names that may hold the model of --hf-repo REPO[:QUANT] [--hf-file FILE]."""
    repo = hf_repo.split(":", 1)[0] if hf_repo else None
    names = []
    if (repo, hf_file) in KNOWN:
        names.append(KNOWN[(repo, hf_file)])
    if hf_file:
        names.append(os.path.basename(hf_file))
    elif repo:
        names.append(repo.rsplit("/", 1)[-1] + ".gguf")
    return names


def resolve(models_dir, hf_repo=None, hf_file=None, model=None, model_url=None):
    """(local path or None, what was asked for) for one server's model arguments; (None, None) when
    no model is asked for at all (llama-server's router mode)."""
    if model:
        return (os.path.abspath(model) if os.path.isfile(model) else None), model
    if model_url:
        path = os.path.join(models_dir, os.path.basename(model_url))
        return (path if os.path.isfile(path) else None), model_url
    if hf_repo or hf_file:
        asked = f"{hf_repo}" + (f" {hf_file}" if hf_file else "")
        for name in candidates(hf_repo, hf_file):
            path = os.path.join(models_dir, name)
            if os.path.isfile(path):
                return os.path.abspath(path), asked
        return None, asked
    return None, None
