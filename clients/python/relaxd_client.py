"""relaxd_client — a Python client for relaxd's HTTP API (docs/server.md).

Standard library only (urllib, hashlib, json), so it drops into any CI image. It does
what the `relax` CLI does, with the same rules:

* compile(module, target, opt_level, async_, out) posts {"module", "target", "options":
  {"opt_level"}, "async"} to /v1/compile; a 202 job is polled at /v1/jobs/<id> with a
  backoff from 100 ms growing by half up to 2 s. Returns the result dict ({"artifact",
  "cached", "key", "size", "target", "compile_ms"}); with out= the artifact is also
  downloaded and verified.
* fetch(artifact_id, out) streams /v1/artifacts/<id> into a temp file beside out,
  hashing as it writes, and renames it over out only when the SHA-256 equals the id.
* meta(artifact_id) returns the metadata JSON; status() returns /healthz's status plus
  the cache and queue numbers parsed from /metrics (None where absent).
* bench(artifact, ...) runs a benchmark on a device agent (docs/agent.md): artifact is an
  id, a path to an .rxa the server holds (its SHA-256 is the id), or a relax-json module
  (dict or .json path, compiled first); inputs= {name: ndarray or .npy path}, expected=
  [ndarray or .npy path], rtol/atol, labels, timeouts. It submits to /v1/benchmarks,
  polls /v1/benchmarks/<id> (50 ms growing by half to 1 s; on_progress(job) is called
  on every change of state) and returns the finished job object; a failed or cancelled
  job raises BenchmarkError (a RelaxdError carrying .job, whose "result" may still hold
  the statistics of a failed check). wait=False returns the submitted job's id.
  benchmark(id), jobs(status, limit), cancel(id) and agents() map the other endpoints.
* Every failure raises RelaxdError, whose str() is the CLI's message: "<message> (HTTP
  400 invalid_module)" with .status, .code and .errors ([{"path", "message"}], the
  located module errors); "cannot reach relaxd at URL: <reason>" when no connection could
  be made. A 503 with Retry-After is retried up to 5 times honoring it (each wait capped
  at 60 s and by the timeout). Bodies are capped: 16 MiB of JSON, 1 GiB of artifact.

The token comes from the token= argument or RELAX_TOKEN, the server from server= or
RELAX_SERVER (default http://127.0.0.1:8080). Run as a script, it is a small CLI:
`python3 relaxd_client.py {compile,fetch,meta,status,bench,agents,jobs} ...` with exit
status 0/1/2.
"""

import hashlib
import json
import os
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request

__all__ = ["Client", "RelaxdError", "BenchmarkError", "parse_metrics"]

DEFAULT_SERVER = "http://127.0.0.1:8080"
JSON_CAP = 16 << 20
ARTIFACT_CAP = 1 << 30
MAX_RETRIES = 5
RETRY_CAP_S = 60.0
_ID_RE = re.compile(r"^[0-9a-f]{64}$")
_JOB_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


class RelaxdError(Exception):
    """A failed request. message: one line; status: HTTP status or None; code: relaxd's
    error code or None; errors: the located errors, a list of {"path", "message"}."""

    def __init__(self, message, status=None, code=None, errors=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.errors = list(errors or [])

    def __str__(self):
        tag = " ".join(x for x in (f"HTTP {self.status}" if self.status else "", self.code or "") if x)
        return f"{self.message} ({tag})" if tag else self.message

    def details(self):
        """The located errors as the CLI prints them: '  path: message' lines."""
        out = []
        for e in self.errors:
            if isinstance(e, dict):
                path, msg = e.get("path"), e.get("message", "(no message)")
                out.append(f"  {path}: {msg}" if path else f"  {msg}")
            else:
                out.append(f"  {e}")
        return out


class BenchmarkError(RelaxdError):
    """A benchmark job that ended failed or cancelled. job: the job object."""

    def __init__(self, message, code=None, job=None):
        super().__init__(message, None, code)
        self.job = job or {}


def _error_from_body(status, body):
    try:
        doc = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        doc = None
    err = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(err, dict):
        return RelaxdError(str(err.get("message") or "request failed"), status, err.get("code"),
                           err.get("errors"))
    if isinstance(err, str):
        return RelaxdError(err, status)
    first = body.decode("utf-8", "replace").splitlines()[:1]
    return RelaxdError("relaxd answered HTTP %d%s" % (status, (": " + first[0][:200]) if first else ""))


def parse_metrics(text):
    """The numbers `relax status` shows from Prometheus text: cache_entries, cache_bytes,
    cache_hits, cache_misses, queue_depth (None when absent). Names match by their
    ending (with or without a relaxd_ prefix or _total suffix); label sets are summed."""
    out = dict.fromkeys(["cache_entries", "cache_bytes", "cache_hits", "cache_misses", "queue_depth"])

    def add(k, v):
        out[k] = v if out[k] is None else out[k] + v

    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m:
            continue
        name, labels = m.group(1), m.group(2) or ""
        try:
            v = float(m.group(3))
        except ValueError:
            continue
        if name.endswith("_total"):
            name = name[:-6]

        def ends(s):
            return name == s or name.endswith("_" + s)

        for key in ("cache_entries", "cache_bytes", "cache_hits", "cache_misses"):
            if ends(key):
                add(key, v)
                break
        else:
            if ends("cache_lookups"):
                if '"hit"' in labels:
                    add("cache_hits", v)
                elif '"miss"' in labels:
                    add("cache_misses", v)
            elif ends("queue_depth") or ends("queue_length") or ends("jobs_queued"):
                add("queue_depth", v)
    return out


class Client:
    """A connection to one relaxd. timeout: seconds for a whole call (0: none)."""

    def __init__(self, server=None, token=None, timeout=600.0):
        server = server or os.environ.get("RELAX_SERVER") or DEFAULT_SERVER
        if not server.startswith(("http://", "https://")):
            raise RelaxdError(f"server URL must start with http:// or https:// (got '{server}')")
        self.server = server.rstrip("/")
        self.token = token if token is not None else os.environ.get("RELAX_TOKEN") or None
        self.timeout = float(timeout)

    # ---- transport ----

    def _open(self, method, path, body, deadline):
        """Returns an open response with a 2xx status; raises RelaxdError otherwise."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        for attempt in range(MAX_RETRIES + 1):
            left = None
            if deadline:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RelaxdError(f"relaxd at {self.server} did not answer within {self.timeout:g} s (--timeout)")
            req = urllib.request.Request(self.server + path, data=data, method=method)
            req.add_header("User-Agent", "relaxd_client.py")
            if data is not None:
                req.add_header("Content-Type", "application/json")
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            try:
                return urllib.request.urlopen(req, timeout=left if left else None)
            except urllib.error.HTTPError as e:
                with e:
                    ra = e.headers.get("Retry-After")
                    body_bytes = e.read(JSON_CAP)
                if e.code == 503 and ra is not None and attempt < MAX_RETRIES:
                    try:
                        wait = max(0.0, float(ra))
                    except ValueError:
                        wait = 1.0
                    wait = min(wait, RETRY_CAP_S)
                    if not deadline or time.monotonic() + wait < deadline:
                        time.sleep(wait)
                        continue
                raise _error_from_body(e.code, body_bytes) from None
            except urllib.error.URLError as e:
                reason = e.reason
                if isinstance(reason, TimeoutError):
                    raise RelaxdError(f"relaxd at {self.server} did not answer within {self.timeout:g} s (--timeout)") from None
                if isinstance(reason, OSError):
                    raise RelaxdError(f"cannot reach relaxd at {self.server}: {reason}") from None
                raise RelaxdError(f"request to relaxd at {self.server} failed: {reason}") from None
            except TimeoutError:
                raise RelaxdError(f"relaxd at {self.server} did not answer within {self.timeout:g} s (--timeout)") from None
            except OSError as e:
                raise RelaxdError(f"request to relaxd at {self.server} failed: {e}") from None
        raise AssertionError("unreachable")

    def _deadline(self):
        return time.monotonic() + self.timeout if self.timeout > 0 else 0

    def _json(self, method, path, body=None, deadline=None, want_status=False):
        with self._open(method, path, body, deadline if deadline is not None else self._deadline()) as r:
            raw = r.read(JSON_CAP + 1)
            status = r.status
        if len(raw) > JSON_CAP:
            raise RelaxdError(f"response from relaxd at {self.server} is too large (limit {JSON_CAP} bytes)")
        try:
            doc = json.loads(raw.decode("utf-8"))
        except ValueError as e:
            raise RelaxdError(f"bad response from relaxd ({path}): {e}") from None
        return (status, doc) if want_status else doc

    # ---- the API ----

    def compile(self, module, target="cpu", opt_level=None, async_=False, out=None):
        """Compiles module (a dict, or a path to a relax-json file). Returns the result
        dict; with out, also downloads the artifact there (verified)."""
        if not isinstance(module, dict):
            with open(module, "rb") as f:
                module = json.loads(f.read())
        req = {"module": module, "target": target, "async": bool(async_)}
        if opt_level is not None:
            req["options"] = {"opt_level": int(opt_level)}
        deadline = self._deadline()
        status, doc = self._json("POST", "/v1/compile", req, deadline, want_status=True)
        if status == 202:
            job = doc.get("job") if isinstance(doc, dict) else None
            if not isinstance(job, str) or not _JOB_RE.match(job):
                raise RelaxdError("bad response from relaxd (compile): 202 without a valid job id")
            doc = self._wait_job(job, deadline)
        if not isinstance(doc, dict) or not _ID_RE.match(str(doc.get("artifact", ""))):
            raise RelaxdError("bad response from relaxd (compile): no valid artifact id")
        if out is not None:
            self.fetch(doc["artifact"], out, deadline=deadline)
        return doc

    def _wait_job(self, job, deadline):
        delay = 0.1
        while True:
            doc = self._json("GET", "/v1/jobs/" + job, deadline=deadline)
            st = doc.get("status") if isinstance(doc, dict) else None
            if st == "done":
                if not isinstance(doc.get("result"), dict):
                    raise RelaxdError(f"bad response from relaxd (job {job}): done without a result")
                return doc["result"]
            if st == "failed":
                err = doc.get("error")
                if isinstance(err, dict):
                    raise RelaxdError(str(err.get("message") or "compile failed"), None, err.get("code"),
                                      err.get("errors"))
                raise RelaxdError(f"compile job {job} failed" + (f": {err}" if err else ""))
            if st not in ("queued", "running"):
                raise RelaxdError(f"bad response from relaxd (job {job}): unknown status")
            time.sleep(delay)
            delay = min(delay * 1.5, 2.0)

    def fetch(self, artifact_id, out, deadline=None):
        """Downloads artifact_id to out atomically, verified by SHA-256. Returns its size."""
        if not _ID_RE.match(artifact_id or ""):
            raise RelaxdError(f"'{artifact_id}' is not an artifact id (64 lowercase hex digits)")
        out = os.fspath(out)
        d = os.path.dirname(os.path.abspath(out))
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(out) + ".tmp.", dir=d)
        ok = False
        try:
            h = hashlib.sha256()
            n = 0
            with os.fdopen(fd, "wb") as f:
                with self._open("GET", "/v1/artifacts/" + artifact_id, None,
                                deadline if deadline is not None else self._deadline()) as r:
                    while True:
                        chunk = r.read(1 << 20)
                        if not chunk:
                            break
                        n += len(chunk)
                        if n > ARTIFACT_CAP:
                            raise RelaxdError(f"response from relaxd at {self.server} is too large (limit {ARTIFACT_CAP} bytes)")
                        h.update(chunk)
                        f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            if h.hexdigest() != artifact_id:
                raise RelaxdError(f"artifact {artifact_id} failed verification: the {n} bytes received "
                                  f"hash to {h.hexdigest()}; {out} not written")
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, out)
            ok = True
            return n
        finally:
            if not ok:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def meta(self, artifact_id):
        """The metadata JSON of artifact_id."""
        if not _ID_RE.match(artifact_id or ""):
            raise RelaxdError(f"'{artifact_id}' is not an artifact id (64 lowercase hex digits)")
        return self._json("GET", f"/v1/artifacts/{artifact_id}/meta")

    # ---- benchmarks on device agents ----

    @staticmethod
    def _npy_b64(a):
        """A .npy path or an array (anything numpy.save accepts) as base64 of .npy bytes."""
        import base64
        import io
        if isinstance(a, (str, bytes, os.PathLike)):
            with open(a, "rb") as f:
                data = f.read()
            if not data.startswith(b"\x93NUMPY"):
                raise RelaxdError(f"{os.fsdecode(a)}: not a .npy file (bad magic)")
        else:
            import numpy as np
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
            data = buf.getvalue()
        return base64.b64encode(data).decode("ascii")

    def _artifact_id(self, artifact, target, deadline):
        if isinstance(artifact, dict) or str(artifact).endswith(".json"):
            return self.compile(artifact, target)["artifact"]
        if _ID_RE.match(str(artifact)):
            return str(artifact)
        h = hashlib.sha256()
        with open(artifact, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    def bench(self, artifact, target="cpu", function=None, shapes=None, repeat=None, number=None,
              labels=None, priority=None, timeout_s=None, queue_timeout_s=None, inputs=None,
              expected=None, rtol=None, atol=None, max_attempts=None, wait=True, on_progress=None):
        """Runs a benchmark job on an agent and returns the finished job object (see the
        module docstring); wait=False returns the job id at once."""
        deadline = self._deadline()
        # a module compiles for the whole target; the job names its kind (any agent that
        # offers vulkan runs a vulkan,max_threads=64 artifact)
        body = {"artifact": self._artifact_id(artifact, target, deadline),
                "target": target.split(",", 1)[0]}
        for k, v in (("function", function), ("shapes", shapes), ("repeat", repeat),
                     ("number", number), ("labels", labels), ("priority", priority),
                     ("timeout_s", timeout_s), ("queue_timeout_s", queue_timeout_s),
                     ("max_attempts", max_attempts)):
            if v is not None:
                body[k] = v
        if inputs:
            body["inputs"] = {k: self._npy_b64(v) for k, v in inputs.items()}
        if expected is not None:
            body["expected"] = [self._npy_b64(v) for v in expected]
        if rtol is not None or atol is not None:
            body["tolerance"] = {k: float(v) for k, v in (("rtol", rtol), ("atol", atol)) if v is not None}
        doc = self._json("POST", "/v1/benchmarks", body, deadline)
        job = doc.get("job") if isinstance(doc, dict) else None
        if not isinstance(job, str) or not _JOB_RE.match(job):
            raise RelaxdError("bad response from relaxd (benchmark): no valid job id")
        if not wait:
            return job
        return self.wait_benchmark(job, on_progress)

    def wait_benchmark(self, job, on_progress=None):
        """Polls a benchmark job until it ends; returns it, or raises BenchmarkError."""
        delay, last = 0.05, None
        while True:
            # the wait is bounded by the server's queue and run limits, not self.timeout
            doc = self.benchmark(job)
            st = doc.get("status")
            if st in ("queued", "running"):
                key = (st, doc.get("position"), doc.get("agent"), doc.get("attempts"))
                if key != last and on_progress:
                    on_progress(doc)
                last = key
                time.sleep(delay)
                delay = min(delay * 1.5, 1.0)
                continue
            if st == "done":
                return doc
            err = doc.get("error") if isinstance(doc.get("error"), dict) else {}
            if st == "cancelled":
                raise BenchmarkError(f"benchmark job {job} was cancelled", "cancelled", doc)
            raise BenchmarkError(str(err.get("message") or f"benchmark job {job} {st}"), err.get("code"), doc)

    def benchmark(self, job):
        """GET /v1/benchmarks/<job>: the job object."""
        if not _JOB_RE.match(job or ""):
            raise RelaxdError(f"'{job}' is not a job id")
        return self._json("GET", "/v1/benchmarks/" + job)

    def jobs(self, status=None, limit=None):
        """Benchmark jobs, newest first (a list of job objects)."""
        q = "&".join(f"{k}={v}" for k, v in (("status", status), ("limit", limit)) if v is not None)
        return self._json("GET", "/v1/benchmarks" + ("?" + q if q else "")).get("jobs", [])

    def cancel(self, job):
        """Cancels a queued or running benchmark job; returns the job object."""
        if not _JOB_RE.match(job or ""):
            raise RelaxdError(f"'{job}' is not a job id")
        return self._json("POST", f"/v1/benchmarks/{job}/cancel", {})

    def agents(self):
        """The registered agents (a list of agent objects)."""
        return self._json("GET", "/v1/agents").get("agents", [])

    def status(self):
        """{"status": <healthz status>, "cache_entries", "cache_bytes", "cache_hits",
        "cache_misses", "queue_depth"} (numbers None when /metrics lacks them or is not
        available)."""
        deadline = self._deadline()
        h = self._json("GET", "/healthz", deadline=deadline)
        out = {"status": h.get("status") if isinstance(h, dict) else None}
        try:
            with self._open("GET", "/metrics", None, deadline) as r:
                text = r.read(JSON_CAP).decode("utf-8", "replace")
            out.update(parse_metrics(text))
        except RelaxdError:
            out.update(parse_metrics(""))
        return out


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(prog="relaxd_client.py", description="A small client of relaxd.")
    p.add_argument("--server")
    p.add_argument("--token")
    p.add_argument("--timeout", type=float, default=600.0)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile")
    c.add_argument("module")
    c.add_argument("--target", default="cpu")
    c.add_argument("--opt-level", type=int, choices=range(4))
    c.add_argument("-o", dest="out")
    c.add_argument("--async", dest="async_", action="store_true")
    f = sub.add_parser("fetch")
    f.add_argument("id")
    f.add_argument("-o", dest="out", required=True)
    m = sub.add_parser("meta")
    m.add_argument("id")
    sub.add_parser("status")
    b = sub.add_parser("bench")
    b.add_argument("artifact")
    b.add_argument("--target", default="cpu")
    b.add_argument("--fn", dest="function")
    b.add_argument("--shape", action="append", default=[])
    b.add_argument("--repeat", type=int)
    b.add_argument("--number", type=int)
    b.add_argument("--label", action="append", default=[])
    b.add_argument("--in", dest="inputs", action="append", default=[])
    b.add_argument("--expect", action="append", default=[])
    b.add_argument("--rtol", type=float)
    b.add_argument("--atol", type=float)
    b.add_argument("--queue-timeout", type=int)
    b.add_argument("--run-timeout", type=int)
    sub.add_parser("agents")
    j = sub.add_parser("jobs")
    j.add_argument("--status")
    a = p.parse_args(argv)
    try:
        cl = Client(a.server, a.token, a.timeout)
        if a.cmd == "compile":
            r = cl.compile(a.module, a.target, a.opt_level, a.async_, a.out)
            print(f"{r['artifact']}  cached" if r.get("cached") else
                  f"{r['artifact']}  compiled in {float(r.get('compile_ms') or 0):.0f} ms ({r.get('size', 0)} bytes)")
        elif a.cmd == "fetch":
            n = cl.fetch(a.id, a.out)
            print(f"wrote {a.out} ({n} bytes, SHA-256 verified)", file=sys.stderr)
        elif a.cmd == "meta":
            print(json.dumps(cl.meta(a.id), indent=2))
        elif a.cmd == "bench":
            shapes = {k: int(v) for k, v in (x.split("=", 1) for x in a.shape)}
            inputs = dict(x.split("=", 1) for x in a.inputs)
            job = cl.bench(a.artifact, a.target, a.function, shapes or None, a.repeat, a.number,
                           a.label or None, None, a.run_timeout, a.queue_timeout, inputs or None,
                           a.expect or None, a.rtol, a.atol,
                           on_progress=lambda d: print(f"job {d['id']}: {d['status']}", file=sys.stderr))
            print(json.dumps(job, indent=2))
        elif a.cmd == "agents":
            print(json.dumps(cl.agents(), indent=2))
        elif a.cmd == "jobs":
            print(json.dumps(cl.jobs(a.status), indent=2))
        else:
            s = cl.status()
            print(f"relaxd at {cl.server}: {s['status']}")
            print(json.dumps(s, indent=2))
            if s["status"] != "ok":
                return 1
    except RelaxdError as e:
        print(f"error: {e}", file=sys.stderr)
        for line in e.details():
            print(line, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
