"""The distributed evaluation's rules that need no Prefect: a unit of work and its identity, the endpoint's limit
name, what a lost unit run is and the commit every unit runs. ``flows/model_runs.py`` and ``flows/orchestration.py``
run them in Prefect.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from core.errors import UserError
from tasks.evaluation.answer_cache import AnswerCache, GenerationSettings, lease_state, prompt_sha256, revoke
from tasks.evaluation.client import Model, ReplayModel, model_from_environment
from tasks.evaluation.limits import LOST_AFTER_SECONDS
from tasks.evaluation.runs import Request, cached_answers, load_requests

LIMIT_PREFIX = "kobbq-endpoint-"
SHA = re.compile(r"[0-9a-f]{40}")


def limit_name(endpoint: str) -> str:
    """The endpoint's global concurrency limit: ``http://10.0.0.5:8000/v1`` -> ``kobbq-endpoint-10.0.0.5-8000``."""
    parsed = urlparse(endpoint)
    where = parsed.netloc or endpoint
    return LIMIT_PREFIX + (re.sub(r"[^A-Za-z0-9.]+", "-", where).strip("-") or "local")


@dataclass(frozen=True)
class RunUnit:
    """One (model, prompt[, shard]) unit of work; plain values only, so it travels as deployment parameters."""

    prepared: str
    endpoint: str
    model: str
    prompt_id: int
    cache: str
    chat: bool = True
    max_tokens: int = 30
    concurrency: int = 4
    key_env: str = "OPENAI_API_KEY"
    replay: str | None = None
    shard: int = 0  # this unit answers the prompt's requests whose prompt text hashes to `shard` ...
    shards: int = 1  # ... modulo `shards` (more, smaller units share out better among workers)
    max_retries: int = 5  # the client's retries per request
    timeout: float = 120.0  # seconds per request attempt
    code_commit: str | None = None  # the commit the evaluation pinned: a run with other code refuses
    lost_after: float = LOST_AFTER_SECONDS  # a run that did not renew the unit's lease for this long is lost

    # What decides the unit's answers (and where they go): the rest says only how to get them.
    IDENTITY = ("prepared", "endpoint", "model", "prompt_id", "cache", "chat", "max_tokens", "replay", "shard",
                "shards")

    @property
    def settings(self) -> GenerationSettings:
        return GenerationSettings(self.endpoint, self.model, chat=self.chat, max_tokens=self.max_tokens)

    @property
    def key(self) -> str:
        """A stable name for this unit: the same answers to the same cache, the same key (however they are asked)."""
        identity = {name: getattr(self, name) for name in self.IDENTITY}
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:24]

    def describe(self) -> str:
        shard = f" shard {self.shard + 1}/{self.shards}" if self.shards > 1 else ""
        return f"{self.model} prompt {self.prompt_id}{shard}"

    def requests(self) -> list[Request]:
        """The unit's requests; a prompt text always falls in one shard, so it is never asked by two units."""
        requests = load_requests(Path(self.prepared), [self.prompt_id])
        return [r for r in requests if int(prompt_sha256(r.prompt)[:16], 16) % self.shards == self.shard]

    def unanswered(self) -> int:
        """How many of the unit's distinct prompts the answer cache does not hold yet."""
        requests = self.requests()
        with AnswerCache(Path(self.cache)) as cache:
            found = cached_answers(requests, self.settings, cache)
        return len({r.prompt for r in requests} - found.keys())

    def lease(self) -> tuple[str | None, int]:
        with AnswerCache(Path(self.cache)) as cache:
            return lease_state(cache, self.key)

    def revoke(self, holder: str, why: str) -> None:
        with AnswerCache(Path(self.cache)) as cache:
            revoke(cache, self.key, holder, why)

    def model_client(self) -> Model:
        if self.replay:
            return ReplayModel(self.settings, Path(self.replay))
        return model_from_environment(self.settings, self.key_env, self.max_retries, self.timeout)


def evaluation_key(unit_keys: list[str]) -> str:
    """The evaluation's name: its units, whatever their order."""
    return hashlib.sha256("\n".join(sorted(unit_keys)).encode("utf-8")).hexdigest()[:24]


def lost_state(finished: bool, holding: bool, silent: float) -> tuple[bool, str]:
    """What a lost run is: (completed, message). Completed if the cache holds every answer of its unit (it wrote
    them, then its process ended without reporting: its work is not a failure), Crashed otherwise."""
    if finished:
        return True, (f"every answer of the unit is in the answer cache; its process stopped reporting "
                      f"({silent:.0f} s without a sign of life)")
    if holding:
        return False, (f"its unit's lease was not renewed for {silent:.0f} s: its process is gone or stopped "
                       "(it sends nothing more); the unit runs again")
    return False, f"it did not start answering within {silent:.0f} s: its worker is gone; the unit runs again"


@dataclass(frozen=True)
class CodePin:
    """The commit every unit of an evaluation runs, resolved once as the command starts."""

    commit: str | None  # None: the deployment's code is not a git checkout seen from here
    where: str  # what was resolved, for the command's first line
    clone: bool  # the deployment clones (the commit goes to its pull step as KOBBQ_COMMIT)
    folder: str | None = None  # the shared folder the units run (checked again before each unit run)

    def check(self) -> None:
        """The shared folder must still be the pinned commit, without uncommitted changes."""
        if self.folder:
            check_code(self.commit, Path(self.folder))


def resolve_ref(repository: str, ref: str) -> str:
    """The commit ``ref`` (a branch, a tag or a commit) names in ``repository`` now."""
    if SHA.fullmatch(ref.lower()):
        return ref.lower()
    result = subprocess.run(["git", "ls-remote", "--", repository, ref, f"{ref}^{{}}"], capture_output=True,
                            text=True, timeout=120)
    if result.returncode != 0:
        raise UserError(f"cannot read {repository} from here (git ls-remote: "
                        f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.returncode}); "
                        "the command resolves kobbq_ref to one commit before any unit starts")
    found = {name: commit for commit, _, name in (line.partition("\t") for line in result.stdout.splitlines())}
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in found:
            return found[name]
    raise UserError(f"kobbq_ref {ref!r} is not a branch or tag of {repository}")


def git_output(folder: Path, *args: str) -> str | None:
    """What ``git -C folder ARGS`` prints (None: not a git checkout, or git is missing)."""
    try:
        result = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return result.stdout.rstrip() if result.returncode == 0 else None


def code_change(pinned: str, folder: Path) -> str | None:
    """How the code in ``folder`` differs from the ``pinned`` commit: another commit, or uncommitted changes to
    its files (files git does not track are not code the units import from a clean checkout); None: it does not."""
    actual = git_output(folder, "rev-parse", "HEAD")
    if actual != pinned:
        return f"it is at commit {actual[:12] if actual else '(none: not a git checkout)'}"
    changed = (git_output(folder, "status", "--porcelain", "--untracked-files=no") or "").splitlines()
    if changed:
        names = [line[3:] for line in changed]
        return f"{len(names)} file(s) changed and not committed: {', '.join(names[:3])}" + (" ..." if len(names) > 3
                                                                                           else "")
    return None


def check_code(pinned: str | None, folder: Path) -> None:
    """A unit run (and the command, before each one) refuses other code than the commit its evaluation pinned."""
    change = code_change(pinned, folder) if pinned else None
    if change:
        raise UserError(f"the units' code is not the commit the evaluation pinned ({pinned[:12]}): {change}; commit "
                        "the change (or undo it), then run the same command again: it pins the code as it is then",
                        folder)
