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
again without it). ``timeout`` bounds connecting and each silence while reading; a
request ``deadline`` bounds the whole answer. 429 and 5xx answers and connection failures
are retried ``retries`` times with the SDK's exponential backoff (it honours
``Retry-After``). Failures are :class:`~citewell.errors.GenerationError`:

- ``LLM_UNAVAILABLE``: the endpoint cannot be reached, timed out, dropped the connection
  mid-answer, or still answered 429/5xx after the retries;
- ``LLM_BAD_RESPONSE``: it answered something that is not a chat-completion stream
  (malformed JSON, an unexpected shape), refused the request (4xx other than 429), or
  streamed an empty answer.

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

#: Connect timeout cap (seconds): a down endpoint is reported quickly even with a long read timeout.
CONNECT_TIMEOUT = 10.0
#: Judge answers kept per generator (sentence, passage) → verdict.
JUDGE_CACHE = 2048


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
        messages = chat_messages(request)
        stream = self._open(messages, request)
        produced = False
        try:
            for chunk in stream:
                if request.deadline is not None and time.monotonic() > request.deadline:
                    raise GenerationError(f"the LLM endpoint {self.settings.base_url} did not finish the answer in "
                                          "the time allowed", code="LLM_UNAVAILABLE")
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
                    if text:
                        if not isinstance(text, str):
                            raise TypeError("delta content is not text")
                        produced = True
                        yield text
        except GenerationError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified into a coded error
            raise self._error(exc, streaming=True) from None
        finally:
            stream.close()
        if not produced:
            raise GenerationError(f"the model at {self.settings.base_url} returned an empty answer",
                                  code="LLM_BAD_RESPONSE")

    def _open(self, messages: list[dict[str, str]], request: GenerationRequest) -> Any:
        """The completion stream (retries are the SDK's); an endpoint that rejects
        ``stream_options`` is asked once more without it."""
        import openai

        timeout = self.settings.timeout
        remaining = request.remaining()
        if remaining is not None:
            if remaining <= 0:
                raise GenerationError("no time was left to ask the LLM endpoint", code="LLM_UNAVAILABLE")
            timeout = min(timeout, remaining)
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


__all__ = ["CONNECT_TIMEOUT", "LLMGenerator"]
