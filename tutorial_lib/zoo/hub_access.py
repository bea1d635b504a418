"""Talking to the Hugging Face hub before a download: is it there, may we read this repo, which revisions exist.

Every request goes through ``huggingface_hub``'s own HTTP client, so it honours ``HF_ENDPOINT`` (a mirror, or the
tests' loopback hub), the proxy variables and the token (``HF_TOKEN`` or ``huggingface-cli login``) exactly as the
download will, and runs in a daemon thread joined with a timeout: a hub that accepts the connection and never
answers costs the timeout, not a hang.

>>> hub_status(timeout=3.0)                                   # doctest: +SKIP
(True, 'https://huggingface.co')
>>> repo_status("meta-llama/Llama-3.2-1B").state              # doctest: +SKIP  (no token, licence not accepted)
'gated'
"""
from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from urllib.parse import quote


class GatedModelError(PermissionError):
    """The hub refused a gated model (HTTP 401 / 403): the message says how to get access."""


def hub_endpoint() -> str:
    """The hub address the loaders will use: ``HF_ENDPOINT`` (a mirror, or a test hub) or huggingface.co."""
    from huggingface_hub import constants

    return constants.ENDPOINT  # read from HF_ENDPOINT when huggingface_hub is imported, as the loaders do


def hub_offline_requested() -> bool:
    """True when the caller asked for offline mode (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``)."""
    from huggingface_hub import constants

    flags = (os.environ.get("HF_HUB_OFFLINE", ""), os.environ.get("TRANSFORMERS_OFFLINE", ""))
    return bool(constants.HF_HUB_OFFLINE) or any(f.strip().lower() in ("1", "true", "yes", "on") for f in flags)


def _in_thread(fn, timeout: float) -> dict:
    """Run ``fn()`` in a daemon thread for at most ``timeout`` s: ``{"value": ...}``, ``{"error": exc}`` or ``{}``."""
    result: dict = {}

    def run():
        try:
            result["value"] = fn()
        except Exception as err:  # DNS failure, refused, proxy error, timeout, HTTP error
            result["error"] = err

    t = threading.Thread(target=run, daemon=True, name="tutorial_lib-hub-probe")
    t.start()
    t.join(timeout)
    return dict(result)


def _request(method: str, url: str, timeout: float, auth: bool = False) -> dict:
    """One HTTP request through huggingface_hub's client (with the token when ``auth``), bounded by ``timeout``."""
    def call():
        from huggingface_hub.utils import build_hf_headers, get_session

        headers = build_hf_headers() if auth else None
        return get_session().request(method, url, headers=headers, timeout=timeout, follow_redirects=True)

    return _in_thread(call, timeout + 0.5)


def _unreachable(endpoint: str, outcome: dict, timeout: float) -> str | None:
    err = outcome.get("error")
    if "value" not in outcome and (err is None or "Timeout" in type(err).__name__):
        return f"the hub at {endpoint} did not answer within {timeout:g} s"
    if err is not None:
        return f"the hub at {endpoint} cannot be reached ({type(err).__name__}: {str(err)[:80]})"
    return None


def hub_status(timeout: float = 3.0, repo: str = "gpt2") -> tuple[bool, str]:
    """Ask the hub for ``/api/models/{repo}`` and say whether it answered, and if not, why.

    Returns ``(True, endpoint)`` or ``(False, reason)``; takes at most ``timeout`` (+0.5) seconds.
    """
    if hub_offline_requested():
        return False, "offline mode was asked for (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)"
    endpoint = hub_endpoint().rstrip("/")
    url = f"{endpoint}/api/models/{repo}"
    outcome = _request("GET", url, timeout)
    why = _unreachable(endpoint, outcome, timeout)
    if why:
        return False, why
    status = outcome["value"].status_code
    if 200 <= status < 300:
        return True, endpoint
    return False, f"the hub at {endpoint} answered HTTP {status} for {url}"


def hub_reachable(timeout: float = 3.0) -> bool:
    """True if the hub (``HF_ENDPOINT`` or huggingface.co, through any proxy) answers within ``timeout``."""
    return hub_status(timeout)[0]


@dataclass(frozen=True)
class RepoStatus:
    """What the hub said about one repo at one revision.

    ``state``: ``"ok"``; ``"gated"`` (401/403 for a gated repo: licence not accepted, or no token);
    ``"not_found"`` (no such repo); ``"no_revision"`` (the repo exists, the revision does not);
    ``"unreachable"`` (offline, no answer, 5xx). ``detail`` says why in words.
    """
    state: str
    detail: str
    http_status: int | None = None
    token_sent: bool = False


def repo_status(repo: str, revision: str = "main", timeout: float = 3.0, gated: bool = False) -> RepoStatus:
    """Ask for the repo's ``config.json`` at ``revision`` (a HEAD request, with the token if there is one).

    This is the first file a download fetches, so its answer is what the download would meet: 200 for a
    readable repo, 401 (no token) or 403 (a token without access) with ``X-Error-Code: GatedRepo`` for a gated
    one, 404 with ``RevisionNotFound`` / ``RepoNotFound``. ``gated=True`` reads a bare 401/403 as gated too.
    """
    if hub_offline_requested():
        return RepoStatus("unreachable", "offline mode was asked for (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)")
    from huggingface_hub import get_token

    token_sent = bool(get_token())  # (building the headers here could wait on a stalled hub: that is in the thread)
    endpoint = hub_endpoint().rstrip("/")
    url = f"{endpoint}/{repo}/resolve/{quote(revision, safe='')}/config.json"
    outcome = _request("HEAD", url, timeout, auth=True)
    why = _unreachable(endpoint, outcome, timeout)
    if why:
        return RepoStatus("unreachable", why, token_sent=token_sent)
    response = outcome["value"]
    code, error = response.status_code, response.headers.get("X-Error-Code", "")
    if 200 <= code < 400:
        return RepoStatus("ok", endpoint, code, token_sent)
    if code in (401, 403) and (error == "GatedRepo" or (gated and error != "RepoNotFound")):
        return RepoStatus("gated", f"the hub answered HTTP {code} for {repo}", code, token_sent)
    if error == "RevisionNotFound":
        return RepoStatus("no_revision", f"{repo} has no revision {revision!r}", code, token_sent)
    if error == "RepoNotFound" or code in (401, 404):
        return RepoStatus("not_found", f"the hub at {endpoint} has no repo {repo!r} (HTTP {code})", code, token_sent)
    return RepoStatus("unreachable", f"the hub at {endpoint} answered HTTP {code} for {url}", code, token_sent)


def gated_advice(official: str, status: RepoStatus) -> str:
    """What to do when a gated model is refused: accept the licence, then give this machine a token."""
    page = f"{hub_endpoint().rstrip('/')}/{official}"
    if status.token_sent:
        first = (f"{official} is a gated model and the hub refused this machine's token (HTTP {status.http_status}): "
                 f"the account behind the token has not been granted access yet. Open {page}, sign in with that "
                 "account and accept the licence (access for Llama can take a while to be approved), or use a "
                 "token of an account that has access.")
    else:
        first = (f"{official} is a gated model and no Hugging Face token was sent (HTTP {status.http_status}). "
                 f"1. Open {page}, sign in and accept the licence. 2. Create a token with read access at "
                 "https://huggingface.co/settings/tokens. 3. Give it to this machine: run `huggingface-cli login` "
                 "(or `hf auth login`) in a terminal, or set HF_TOKEN in the environment before Python starts "
                 "(on Colab: the key icon, a secret named HF_TOKEN with notebook access).")
    return first + " Then call load_model again. Models that need no licence: qwen3-0.6b, olmo-2-1b, pythia-160m, gpt2."


def list_revisions(repo: str, timeout: float = 10.0) -> list[str]:
    """The repo's branch names (``HfApi.list_repo_refs``), e.g. OLMo-2's ``stage1-step1000-tokens5B`` or
    OLMo-1B-0724's ``step1000-tokens2B``."""
    def call():
        from huggingface_hub import HfApi

        return [b.name for b in HfApi(endpoint=hub_endpoint()).list_repo_refs(repo).branches]

    outcome = _in_thread(call, timeout)
    if "value" not in outcome:
        err = outcome.get("error")
        why = f"{type(err).__name__}: {str(err)[:120]}" if err else f"no answer within {timeout:g} s"
        raise ConnectionError(f"cannot list the revisions of {repo} on {hub_endpoint()} ({why})")
    return outcome["value"]


def hub_cached(official_name: str, revision: str | None = None) -> bool:
    """True if the model's config and weights are already in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache

        files = ("config.json", "model.safetensors")
        if all(isinstance(try_to_load_from_cache(official_name, f, revision=revision), str) for f in files):
            return True
        index = try_to_load_from_cache(official_name, "model.safetensors.index.json", revision=revision)
        return isinstance(index, str) and isinstance(
            try_to_load_from_cache(official_name, "config.json", revision=revision), str)
    except Exception:
        return False


def config_cached(official_name: str, revision: str | None = None) -> bool:
    """True if the repo's ``config.json`` is in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(official_name, "config.json", revision=revision), str)
    except Exception:
        return False


@contextlib.contextmanager
def offline_cache_only():
    """Load from the local cache only, for the duration of the block.

    ``huggingface_hub`` reads ``HF_HUB_OFFLINE`` once at import; its ``is_offline_mode()`` (which
    transformers asks) reads the module attribute, so this flips the attribute -- not ``os.environ`` --
    and restores it afterwards. Without it a cached model takes ~25 s of network retries to load offline.
    """
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before


def download_note(official: str, revision: str | None = None) -> str:
    """'downloading gpt2 (498 MB, first time only) into ...' (sizes from the hub's file list; best effort)."""
    from huggingface_hub import HfApi, constants

    where = constants.HF_HUB_CACHE
    what = official + (f" at revision {revision}" if revision else "")
    try:
        info = HfApi(endpoint=hub_endpoint()).model_info(official, revision=revision, files_metadata=True, timeout=5)
        wanted = [s for s in info.siblings or [] if s.rfilename.endswith((".safetensors", ".json", ".txt"))]
        size = sum(s.size or 0 for s in wanted)
        return f"downloading {what} ({size / 1e6:,.0f} MB, first time only) into the Hugging Face cache at {where}"
    except Exception:
        return f"downloading {what} (first time only) into the Hugging Face cache at {where}"
