"""The LLM generator: answers through any OpenAI-compatible chat-completions endpoint.

The user brings the model — a vLLM, llama.cpp, Ollama, LM Studio or TGI server, OpenAI
or any gateway speaking the chat-completions API — configured by
:class:`~citewell.settings.LLMSettings` (``CITEWELL_LLM_BASE_URL``, ``CITEWELL_LLM_MODEL``
…). citewell brings the passages and keeps the citations honest: the model sees the
passages with short per-turn tags (``S1``, ``S2`` …; :mod:`citewell.generate.prompt`)
and cites them by tag; the answering pipeline maps the tags back to the offered passages
while the text streams and checks every sentence (:mod:`citewell.answer.pipeline`).

Transport: the official ``openai`` SDK, streaming (``stream=True``, usage requested with
``stream_options={"include_usage": True}``; an endpoint that refuses the option is asked
again without it), read in a worker thread (:class:`~citewell.generate.reader.StreamReader`).
Limits:

- ``timeout`` bounds connecting and each silence while reading (any byte, a keep-alive
  comment too, ends a silence);
- ``answer_timeout`` bounds the whole answer, from the request to its last piece,
  whether or not anything arrives (the request's own ``deadline`` when that comes
  first): past it the response is closed from citewell's side;
- ``max_tokens`` is sent to the endpoint and enforced here too: an answer longer than
  ``max_tokens`` × :data:`CHARS_PER_TOKEN` characters is cut there, the stream closed
  and the answer finished as truncated (``finish_reason`` ``length``).

429 and 5xx answers and connection failures are retried ``retries`` times with the SDK's
exponential backoff (it honours ``Retry-After``). A finished answer is one whose stream
gave a ``finish_reason``; ``length`` marks it truncated (``result.truncated`` says why,
and the pipeline adds an ``ANSWER_TRUNCATED`` warning). Failures are
:class:`~citewell.errors.GenerationError`:

- ``LLM_UNAVAILABLE``: the endpoint cannot be reached, timed out (silence or the whole
  answer), dropped the connection mid-answer or ended the stream without a
  ``finish_reason``, or still answered 429/5xx after the retries;
- ``LLM_BAD_RESPONSE``: it answered something that is not a chat-completion stream
  (malformed JSON, an unexpected shape), refused the request (4xx other than 429), or
  streamed an empty or whitespace-only answer (leading whitespace is held back until
  some text follows, so such an answer shows the client nothing and may fall back).

Closing the :class:`~citewell.generate.base.Generation` closes the HTTP stream, so a
client that goes away stops the model's work.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from ..errors import GenerationError
from ..settings import LLMSettings
from .base import Generation, GenerationRequest, GenerationResult
from .prompt import chat_messages, judge_messages
from .reader import DeadlinePassed, StreamReader

#: Connect timeout cap (seconds): a down endpoint is reported quickly even with a long read timeout.
CONNECT_TIMEOUT = 10.0
#: Judge answers kept per generator (sentence, passage) → verdict.
JUDGE_CACHE = 2048
#: Longest answer read, in characters per token of ``max_tokens``: an endpoint that does
#: not honour ``max_tokens`` is cut there (11,200 characters at the default 700). A token
#: of English prose is 3-5 characters; 16 leaves room for long tokens (numbers, runs of
#: spaces) without ever cutting an answer the endpoint kept within its limit.
CHARS_PER_TOKEN = 16


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


class LLMGenerator:
    """Writes answers with an OpenAI-compatible chat endpoint (see the module docstring).

    ``settings``: the endpoint (:class:`~citewell.settings.LLMSettings`, must be
    configured); ``client``: an ``openai.OpenAI`` client to use instead of building one.
    Attributes read by the pipeline: ``name`` (``llm``), ``cites_by_alias`` (True),
    ``fallback`` (answer extractively when the endpoint fails before the answer began),
    ``judge_fn`` (:meth:`judge` when ``settings.judge``, else None). Thread-safe.
    """

    name = "llm"
    cites_by_alias = True

    def __init__(self, settings: LLMSettings, *, client: Any = None) -> None:
        if not settings.configured or not settings.model:
            raise GenerationError("no LLM endpoint is configured (CITEWELL_LLM_BASE_URL, CITEWELL_LLM_MODEL)",
                                  code="LLM_UNAVAILABLE")
        self.settings = settings
        self.model = settings.model
        self.fallback = settings.fallback
        self.judge_fn = self.judge if settings.judge else None
        if client is None:
            from openai import DefaultHttpxClient, OpenAI

            client = OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                            timeout=self._timeout(settings.timeout), max_retries=settings.retries,
                            http_client=DefaultHttpxClient(trust_env=False))
        self._client = client
        self._judged: OrderedDict[tuple[str, str], bool | None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _timeout(seconds: float) -> Any:
        """An SDK timeout: ``seconds`` to read (each silence) and write, connecting capped
        at :data:`CONNECT_TIMEOUT`."""
        from openai import Timeout

        return Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT))

    # ------------------------------------------------------------------ answers

    def write(self, request: GenerationRequest) -> Generation:
        """Start answering ``request``; the pieces stream as the endpoint sends them.
        Nothing is sent before the first piece is asked for."""
        result = GenerationResult(self.name, model=self.model)
        return Generation(self._pieces(request, result), result)

    def _pieces(self, request: GenerationRequest, result: GenerationResult) -> Iterator[str]:
        """The answer's text pieces as the endpoint streams them (see the module docstring:
        deadline, size cap, how the stream must end)."""
        deadline, allowed = self._deadline(request)
        messages = chat_messages(request)
        reader = StreamReader(lambda: self._open(messages, deadline)).start()
        base = self.settings.base_url
        cap = self.settings.max_tokens * CHARS_PER_TOKEN
        written = 0
        produced = False
        held = ""  # leading whitespace: not an answer until something follows it
        try:
            for chunk in reader.items(deadline):
                served = getattr(chunk, "model", None)
                if isinstance(served, str) and served and served != self.model:
                    result.served_model = served
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    result.usage = {k: int(getattr(usage, k)) for k in ("prompt_tokens", "completion_tokens",
                                                                        "total_tokens")
                                    if isinstance(getattr(usage, k, None), int)}
                for choice in chunk.choices or ():
                    if choice.finish_reason:
                        result.finish_reason = str(choice.finish_reason)
                    text = choice.delta.content if choice.delta is not None else None
                    if not text:
                        continue
                    if not isinstance(text, str):
                        raise TypeError("delta content is not text")
                    if not produced and not text.strip():
                        held += text
                        continue
                    text, held = held + text, ""
                    produced = True
                    if written + len(text) > cap:
                        result.finish_reason = "length"
                        result.truncated = (f"the model at {base} wrote past max_tokens "
                                            f"({self.settings.max_tokens}); citewell stopped reading after "
                                            f"{cap:,} characters")
                        if cap > written:
                            yield text[:cap - written]
                        return
                    written += len(text)
                    yield text
        except DeadlinePassed:
            raise GenerationError(f"the LLM endpoint {base} did not finish the answer within {allowed:g} s "
                                  "(the answer timeout)", code="LLM_UNAVAILABLE") from None
        except GenerationError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified into a coded error
            raise self._error(exc, streaming=True) from None
        finally:
            reader.close()
        if result.finish_reason is None:
            raise GenerationError(f"the LLM endpoint {base} ended the stream before the answer was finished "
                                  "(no finish_reason: the connection dropped mid-answer)", code="LLM_UNAVAILABLE")
        if not produced:
            raise GenerationError(f"the model at {base} returned an empty answer", code="LLM_BAD_RESPONSE")
        if result.finish_reason == "length":
            result.truncated = (f"the model at {base} stopped at its length limit (max_tokens "
                                f"{self.settings.max_tokens}); the answer's last sentence may be unfinished")

    def _deadline(self, request: GenerationRequest) -> tuple[float, float]:
        """``(deadline, seconds allowed)`` of an answer starting now: the answer timeout,
        or the request's own deadline when that comes first."""
        allowed = self.settings.answer_timeout
        remaining = request.remaining()
        if remaining is not None and remaining < allowed:
            allowed = remaining
        return time.monotonic() + allowed, allowed

    def _open(self, messages: list[dict[str, str]], deadline: float) -> Any:
        """The completion stream (retries are the SDK's); an endpoint that rejects
        ``stream_options`` is asked once more without it. Runs in the reader's thread."""
        import openai

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GenerationError("no time was left to ask the LLM endpoint", code="LLM_UNAVAILABLE")
        timeout = min(self.settings.timeout, remaining)
        kwargs: dict[str, Any] = dict(model=self.model, messages=messages, stream=True,
                                      temperature=self.settings.temperature, max_tokens=self.settings.max_tokens,
                                      timeout=self._timeout(timeout), stream_options={"include_usage": True})
        try:
            try:
                return self._client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if "stream_options" not in str(exc):
                    raise
                kwargs.pop("stream_options")
                return self._client.chat.completions.create(**kwargs)
        except Exception as exc:  # noqa: BLE001 - classified into a coded error
            raise self._error(exc, streaming=False) from None

    def _error(self, exc: Exception, *, streaming: bool) -> GenerationError:
        """The coded error of an SDK or transport failure."""
        import openai

        base = self.settings.base_url
        names = _names(exc)
        retried = f" after {self.settings.retries} retr{'y' if self.settings.retries == 1 else 'ies'}"
        if isinstance(exc, openai.APITimeoutError) or "TimeoutException" in names or "TimeoutError" in names:
            return GenerationError(f"the LLM endpoint {base} did not answer within {self.settings.timeout:g} s"
                                   f"{retried if not streaming else ''}", code="LLM_UNAVAILABLE")
        if isinstance(exc, openai.APIConnectionError) or names & {"TransportError", "NetworkError", "ProtocolError",
                                                                   "ConnectionError", "StreamError"}:
            what = ("dropped the connection while the answer was streaming" if streaming
                    else f"could not be reached{retried}")
            return GenerationError(f"the LLM endpoint {base} {what}", code="LLM_UNAVAILABLE")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = str(getattr(exc, "message", "") or "")[:200]
            if status == 429 or status >= 500:
                return GenerationError(f"the LLM endpoint {base} answered HTTP {status}{retried} ({detail})",
                                       code="LLM_UNAVAILABLE")
            return GenerationError(f"the LLM endpoint {base} refused the request: HTTP {status} ({detail})",
                                   code="LLM_BAD_RESPONSE")
        return GenerationError(f"the LLM endpoint {base} answered something that is not a chat completion stream "
                               f"({type(exc).__name__}: {str(exc)[:200]})", code="LLM_BAD_RESPONSE")

    # ------------------------------------------------------------------ judge

    def judge(self, sentence: str, passage: str) -> bool | None:
        """Ask the endpoint whether ``passage`` supports ``sentence``: True (yes), False
        (no), None (any other answer, or a failure). Answers are cached per pair."""
        key = (sentence, passage)
        with self._lock:
            if key in self._judged:
                self._judged.move_to_end(key)
                return self._judged[key]
        verdict: bool | None = None
        try:
            answer = self._client.chat.completions.create(
                model=self.model, messages=judge_messages(sentence, passage), temperature=0, max_tokens=3,
                timeout=self._timeout(self.settings.timeout))
            text = (answer.choices[0].message.content or "").strip().lower()
            word = text.split()[0].strip(".,!\"'") if text.split() else ""
            verdict = True if word == "yes" else False if word == "no" else None
        except Exception:  # noqa: BLE001 - no opinion: the pair stays uncertain
            return None
        with self._lock:
            self._judged[key] = verdict
            while len(self._judged) > JUDGE_CACHE:
                self._judged.popitem(last=False)
        return verdict


__all__ = ["CHARS_PER_TOKEN", "CONNECT_TIMEOUT", "LLMGenerator"]
