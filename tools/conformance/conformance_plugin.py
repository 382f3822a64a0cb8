"""pytest plugin for the conformance runner (loaded with -p conformance_plugin, from the suite's
folder). The suite downloads its models from Hugging Face; here they come from a local folder:
- sys.executable is the private Python's wrapper (the suite starts helper scripts with it);
- ServerPreset.load_all (which only warms the download cache) does nothing, and the folder it
  would have made (tests/tmp) is made here;
- a server whose model (or LoRA, draft model, projector, downloaded file) is not in the folder is
  not started: its test is skipped with a reason that starts with ABSENT, which compare.py lists as
  deselected instead of counting it."""
import os
import pytest

import suite_models

ABSENT = "conformance: model absent:"
MODELS = os.environ.get("CONFORMANCE_MODELS", "")


def _missing(server):
    """What this server needs that the models folder lacks, or None."""
    local, asked = suite_models.resolve(MODELS, server.model_hf_repo, server.model_hf_file,
                                        server.model_file, server.model_url)
    if asked is not None and local is None:
        return asked
    for path in [server.model_draft, *(server.lora_files or [])]:
        if path and not os.path.isfile(path):
            return path
    if server.mmproj_url:
        return server.mmproj_url
    return None


def pytest_configure(config):
    import sys
    import utils  # the suite's own module (its folder is on sys.path)

    # Tests start helper scripts with sys.executable: the interpreter needs its private loader.
    sys.executable = os.environ.get("CONFORMANCE_PYTHON", sys.executable)

    utils.ServerPreset.load_all = staticmethod(lambda: None)
    os.makedirs(utils.TMP_DIR, exist_ok=True)  # load_all's downloads made it; tests write there
    start = utils.ServerProcess.start

    def start_if_present(self, *args, **kwargs):
        missing = _missing(self)
        if missing:
            pytest.skip(f"{ABSENT} {missing}")
        return start(self, *args, **kwargs)

    utils.ServerProcess.start = start_if_present
    download = utils.download_file

    def download_if_present(url, output_file_path=None):
        out = output_file_path or f"./tmp/{url.split('/').pop()}"
        local = os.path.join(MODELS, os.path.basename(out))
        if not os.path.exists(out) and not os.path.isfile(local):
            pytest.skip(f"{ABSENT} {url}")
        return out if os.path.exists(out) else os.path.abspath(local)

    utils.download_file = download_if_present
