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
  first): past it the response is closed from citewell's side. Unset (None, the
  default), it is derived per answer (:meth:`LLMGenerator.budget`) from the prompt's size
  and the endpoint's speed as measured on the answers before (:class:`EndpointSpeed`;
  before the first, the slow floors :data:`FLOOR_PROMPT_TPS` and :data:`FLOOR_ANSWER_TPS`):
  the time to read the prompt plus the time to write ``max_tokens``, each at
  :data:`SAFETY` × the measured time, plus :data:`BUDGET_BASE_S`. Until the first token
  the silence allowed is the prompt's reading time (a llama.cpp server sends nothing
  while it reads the prompt), never less than ``timeout``;
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

Refusals: when the request's scope verdict says the scope check found the question's
subject and period (:class:`~citewell.generate.base.ScopeVerdict` ``checked``), an
answer that begins like :data:`~citewell.generate.prompt.NO_ANSWER` is held back (at
most :data:`REFUSAL_CHARS` characters); if the whole answer is such a refusal and cites
nothing, it is :data:`~citewell.errors.LLM_REFUSED` and the pipeline answers extractively
instead (an answer that begins so and cites a passage is kept: it answers in part).

Progress: :attr:`LLMGenerator.progress`, when set, is called about every
:data:`PROGRESS_EVERY_S` seconds while the model reads the prompt (no token yet) with a
:class:`ReadingProgress`, and once more with ``done`` True when the first token arrives
(``citewell ask`` prints ``model reading ~1,950-token prompt… 40 s`` on stderr).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import LLM_REFUSED, GenerationError
from ..settings import LLMSettings
from .base import Generation, GenerationRequest, GenerationResult
from .prompt import NO_ANSWER, chat_messages, judge_messages
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
#: Prompt tokens read per second assumed before the endpoint's speed is measured: a 1.5B
#: Q4 model on two busy cores read 16/s (benchmarks/RESULTS.md, issue 28); a GPU or a
#: hosted API reads thousands.
FLOOR_PROMPT_TPS = 10.0
#: Answer tokens written per second assumed before the speed is measured.
FLOOR_ANSWER_TPS = 2.0
#: Characters per prompt token assumed before measured (English with numbers: 3.5-4.5).
FLOOR_CHARS_PER_TOKEN = 3.5
#: Measured times are multiplied by this in the derived answer timeout (a busy machine slows down).
SAFETY = 2.0
#: Seconds added to every derived answer timeout (connecting, loading, a cold cache).
BUDGET_BASE_S = 30.0
#: Measurements of each speed kept; the slowest of them is budgeted with.
SPEED_SAMPLES = 3
#: Seconds between two progress calls while the model reads the prompt.
PROGRESS_EVERY_S = 1.0
#: Longest answer that may still be a refusal: held back while it reads like one.
REFUSAL_CHARS = 160
#: How a refusal begins (lower case, spaces collapsed): :data:`~citewell.generate.prompt.NO_ANSWER`
#: and the variants small models write.
REFUSAL_STARTS = tuple(f"{a} {b} {c}" for a in ("the sources", "the passages", "the provided passages",
                                                 "the provided sources", "the given passages")
                       for b in ("do not", "don't", "does not") for c in ("answer", "contain", "provide", "state",
                                                                       "include", "mention", "have"))
assert " ".join(NO_ANSWER.lower().split()).startswith(REFUSAL_STARTS)


@dataclass(frozen=True)
class ReadingProgress:
    """What :attr:`LLMGenerator.progress` is told while the model reads a prompt:
    ``prompt_tokens`` (estimated from its characters), ``elapsed_s`` since the request,
    ``budget_s`` (the answer timeout in force), ``done`` (True once, when the first token
    arrived)."""

    prompt_tokens: int
    elapsed_s: float
    budget_s: float
    done: bool = False


class EndpointSpeed:
    """The endpoint's speed as measured on its answers (thread-safe): prompt tokens read
    per second, answer tokens written per second, characters per prompt token. Each is
    None until measured; :meth:`prompt_tps` … give the slowest of the last
    :data:`SPEED_SAMPLES` measurements."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prompt: deque[float] = deque(maxlen=SPEED_SAMPLES)
        self._answer: deque[float] = deque(maxlen=SPEED_SAMPLES)
        self._chars: deque[float] = deque(maxlen=SPEED_SAMPLES)

    def record(self, *, prompt_tokens: int | None, prompt_chars: int, first_token_s: float | None,
               completion_tokens: int | None, writing_s: float | None, timings: Any = None) -> None:
        """Record one answer: its usage, characters of prompt, seconds to the first token
        and seconds from it to the last; ``timings``: llama.cpp's own (``prompt_n``,
        ``prompt_ms``, ``predicted_n``, ``predicted_ms``), preferred when given (a cached
        prompt prefix is not counted as read)."""
        with self._lock:
            if prompt_tokens and prompt_chars:
                self._chars.append(prompt_chars / prompt_tokens)
            t = timings if isinstance(timings, dict) else {}
            pn, pms, an, ams = (t.get(k) for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms"))
            if isinstance(pn, (int, float)) and isinstance(pms, (int, float)) and pn >= 16 and pms > 0:
                self._prompt.append(pn / (pms / 1000))
            elif prompt_tokens and prompt_tokens >= 16 and first_token_s and first_token_s > 0:
                self._prompt.append(prompt_tokens / first_token_s)
            if isinstance(an, (int, float)) and isinstance(ams, (int, float)) and an >= 4 and ams > 0:
                self._answer.append(an / (ams / 1000))
            elif completion_tokens and completion_tokens >= 4 and writing_s and writing_s > 0:
                self._answer.append((completion_tokens - 1) / writing_s)

    def prompt_tps(self) -> float | None:
        """Slowest measured prompt tokens per second, or None."""
        with self._lock:
            return min(self._prompt) if self._prompt else None

    def answer_tps(self) -> float | None:
        """Slowest measured answer tokens per second, or None."""
        with self._lock:
            return min(self._answer) if self._answer else None

    def chars_per_token(self) -> float | None:
        """Fewest measured characters per prompt token, or None."""
        with self._lock:
            return min(self._chars) if self._chars else None


def prompt_chars(messages: list[dict[str, str]]) -> int:
    """Characters of a chat prompt (its messages' contents)."""
    return sum(len(m.get("content") or "") for m in messages)


def _is_refusal_start(text: str) -> bool | None:
    """Whether ``text`` (an answer's beginning) reads like a refusal: True when it starts
    like one, None while it could still become one, False when it cannot."""
    norm = " ".join(text.lower().split())
    if norm.startswith(REFUSAL_STARTS):
        return True
    return None if any(start.startswith(norm) for start in REFUSAL_STARTS) else False


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


class LLMGenerator:
    """Writes answers with an OpenAI-compatible chat endpoint (see the module docstring).

    ``settings``: the endpoint (:class:`~citewell.settings.LLMSettings`, must be
    configured); ``client``: an ``openai.OpenAI`` client to use instead of building one.
    Attributes read by the pipeline: ``name`` (``llm``), ``cites_by_alias`` (True),
    ``fallback`` (answer extractively when the endpoint fails before the answer began),
    ``judge_fn`` (:meth:`judge` when ``settings.judge``, else None). ``speed``: the
    endpoint's measured :class:`EndpointSpeed`; ``progress``: None, or a callable given a
    :class:`ReadingProgress` while the model reads a prompt (module docstring). Thread-safe.
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
        self.speed = EndpointSpeed()
        self.progress: Callable[[ReadingProgress], None] | None = None
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
        messages = chat_messages(request)
        chars = prompt_chars(messages)
        budget = self.budget(chars)
        deadline, allowed = self._deadline(request, budget[0])
        reader = StreamReader(lambda: self._open(messages, deadline, first_wait=budget[1])).start()
        base = self.settings.base_url
        cap = self.settings.max_tokens * CHARS_PER_TOKEN
        written = 0
        produced = False
        held = ""  # leading whitespace: not an answer until something follows it
        guard = request.scope is not None and request.scope.checked  # hold back what may be a refusal
        maybe_refusal = ""
        started = time.monotonic()
        first_at: float | None = None
        timings: Any = None
        tokens = max(1, round(chars / (self.speed.chars_per_token() or FLOOR_CHARS_PER_TOKEN)))
        tell = self.progress

        def tick() -> None:
            if tell is not None and first_at is None:
                try:
                    tell(ReadingProgress(tokens, time.monotonic() - started, allowed))
                except Exception:  # noqa: BLE001 - a progress line never fails the answer
                    pass

        try:
            for chunk in reader.items(deadline, tick=PROGRESS_EVERY_S if tell is not None else None,
                                      on_tick=tick if tell is not None else None):
                served = getattr(chunk, "model", None)
                if isinstance(served, str) and served and served != self.model:
                    result.served_model = served
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    result.usage = {k: int(getattr(usage, k)) for k in ("prompt_tokens", "completion_tokens",
                                                                        "total_tokens")
                                    if isinstance(getattr(usage, k, None), int)}
                extra = getattr(chunk, "model_extra", None)
                if isinstance(extra, dict) and isinstance(extra.get("timings"), dict):
                    timings = extra["timings"]
                for choice in chunk.choices or ():
                    if choice.finish_reason:
                        result.finish_reason = str(choice.finish_reason)
                    text = choice.delta.content if choice.delta is not None else None
                    if not text:
                        continue
                    if not isinstance(text, str):
                        raise TypeError("delta content is not text")
                    if first_at is None:
                        first_at = time.monotonic()
                        if tell is not None:
                            try:
                                tell(ReadingProgress(tokens, first_at - started, allowed, done=True))
                            except Exception:  # noqa: BLE001 - a progress line never fails the answer
                                pass
                    if not produced and not text.strip():
                        held += text
                        continue
                    text, held = held + text, ""
                    if guard:
                        maybe_refusal += text
                        looks = _is_refusal_start(maybe_refusal)
                        if looks is not False and len(maybe_refusal) <= REFUSAL_CHARS:
                            continue  # not shown until it is clearly no refusal, or the answer ends
                        text, maybe_refusal, guard = maybe_refusal, "", False
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
        now = time.monotonic()
        usage = result.usage or {}
        self.speed.record(prompt_tokens=usage.get("prompt_tokens"), prompt_chars=chars,
                          first_token_s=(first_at - started) if first_at is not None else None,
                          completion_tokens=usage.get("completion_tokens"),
                          writing_s=(now - first_at) if first_at is not None else None, timings=timings)
        if maybe_refusal:
            if _is_refusal_start(maybe_refusal) and "[" not in maybe_refusal:  # a refusal citing nothing
                raise GenerationError(f"the model at {base} answered {' '.join(maybe_refusal.split())!r} although "
                                      "citewell's scope check found the question's subject and period in the "
                                      "sources", code=LLM_REFUSED)
            produced = True  # a short answer that only began like a refusal
            yield maybe_refusal
        if not produced:
            raise GenerationError(f"the model at {base} returned an empty answer", code="LLM_BAD_RESPONSE")
        if result.finish_reason == "length":
            result.truncated = (f"the model at {base} stopped at its length limit (max_tokens "
                                f"{self.settings.max_tokens}); the answer's last sentence may be unfinished")

    def budget(self, chars: int) -> tuple[float, float]:
        """``(answer timeout, first-token wait)`` in seconds for a prompt of ``chars``
        characters (module docstring): the setting's ``answer_timeout`` when set (the
        first-token wait then ``timeout``), else derived from the endpoint's measured speed
        (:attr:`speed`; floors before the first answer): reading ``chars`` / chars per
        token prompt tokens, then writing ``max_tokens``, each × :data:`SAFETY` when
        measured, plus :data:`BUDGET_BASE_S`. The first-token wait is never below ``timeout``."""
        fixed = self.settings.answer_timeout
        if fixed is not None:
            return float(fixed), self.settings.timeout
        per_token = self.speed.chars_per_token() or FLOOR_CHARS_PER_TOKEN
        tokens = chars / per_token
        measured_read = self.speed.prompt_tps()
        measured_write = self.speed.answer_tps()
        reading = tokens / measured_read * SAFETY if measured_read else tokens / FLOOR_PROMPT_TPS
        writing = (self.settings.max_tokens / measured_write * SAFETY if measured_write
                   else self.settings.max_tokens / FLOOR_ANSWER_TPS)
        first = max(self.settings.timeout, reading + BUDGET_BASE_S)
        return reading + writing + BUDGET_BASE_S, first

    def _deadline(self, request: GenerationRequest, allowed: float | None = None) -> tuple[float, float]:
        """``(deadline, seconds allowed)`` of an answer starting now: ``allowed`` (the
        answer timeout, :meth:`budget`), or the request's own deadline when that comes first."""
        if allowed is None:
            allowed = self.budget(0)[0]
        remaining = request.remaining()
        if remaining is not None and remaining < allowed:
            allowed = remaining
        return time.monotonic() + allowed, allowed

    def _open(self, messages: list[dict[str, str]], deadline: float, first_wait: float | None = None) -> Any:
        """The completion stream (retries are the SDK's); an endpoint that rejects
        ``stream_options`` is asked once more without it. ``first_wait``: the longest
        silence allowed (the read timeout; until the first token, the prompt's reading
        time), default ``timeout``. Runs in the reader's thread."""
        import openai

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GenerationError("no time was left to ask the LLM endpoint", code="LLM_UNAVAILABLE")
        timeout = min(first_wait or self.settings.timeout, remaining)
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


__all__ = ["BUDGET_BASE_S", "CHARS_PER_TOKEN", "CONNECT_TIMEOUT", "FLOOR_ANSWER_TPS", "FLOOR_CHARS_PER_TOKEN",
           "FLOOR_PROMPT_TPS", "PROGRESS_EVERY_S", "REFUSAL_CHARS", "REFUSAL_STARTS", "SAFETY", "SPEED_SAMPLES",
           "EndpointSpeed", "LLMGenerator", "ReadingProgress", "prompt_chars"]
