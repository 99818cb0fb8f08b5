"""castor._lib: libcastor (include/castor/castor.h) through ctypes: finding the shared library and
a Python handle over its functions."""

import ctypes
import ctypes.util
import math
import os
import pathlib

# Mirrors of the header's structs; fields only ever grow at the end (the header's rule).


class _Options(ctypes.Structure):
    _fields_ = [
        ("url", ctypes.c_char_p),
        ("job", ctypes.c_char_p),
        ("token", ctypes.c_char_p),
        ("ca_file", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("world_size", ctypes.c_int),
        ("nodes", ctypes.c_int),
        ("local_bsz", ctypes.c_double),
        ("accum_steps", ctypes.c_int),
        ("lr_gain", ctypes.c_double),
        ("init_bsz", ctypes.c_double),
        ("max_bsz", ctypes.c_double),
        ("max_local_bsz", ctypes.c_double),
        ("accumulation", ctypes.c_int),
        ("report_interval", ctypes.c_double),
        ("timeout_ms", ctypes.c_long),
        ("seed", ctypes.c_ulonglong),
        ("allreduce_busbw", ctypes.c_double),
    ]


class _Decision(ctypes.Structure):
    _fields_ = [
        ("world_size", ctypes.c_int),
        ("nodes", ctypes.c_int),
        ("local_bsz", ctypes.c_double),
        ("accum_steps", ctypes.c_int),
        ("lr_gain", ctypes.c_double),
        ("from_controller", ctypes.c_int),
        ("version", ctypes.c_longlong),
    ]


class _Stats(ctypes.Structure):
    _fields_ = [
        ("steps", ctypes.c_longlong),
        ("time_skipped", ctypes.c_longlong),
        ("grad_skipped", ctypes.c_longlong),
        ("reports_sent", ctypes.c_longlong),
        ("reports_failed", ctypes.c_longlong),
        ("reports_refused", ctypes.c_longlong),
        ("steps_dropped", ctypes.c_longlong),
        ("grad_sqr", ctypes.c_double),
        ("grad_var", ctypes.c_double),
        ("progress", ctypes.c_double),
        ("grad_biased", ctypes.c_int),
        ("time_warmup", ctypes.c_longlong),
    ]


EINVAL = -2
ERANGE = -7


class CastorError(Exception):
    """A libcastor call failed: code is the library's (negative) error code."""

    def __init__(self, code, what):
        super().__init__(f"{what}: {_strerror(code)} ({code})")
        self.code = code


def find_library():
    """The path of libcastor: $CASTOR_LIB, else libcastor.so next to this package, else in the
    build folder of the source tree the package lies in (build/), else the system's."""
    env = os.environ.get("CASTOR_LIB")
    if env:
        return env
    here = pathlib.Path(__file__).resolve().parent
    for cand in (here / "libcastor.so", here.parents[1] / "build" / "libcastor.so"):
        if cand.exists():
            return str(cand)
    found = ctypes.util.find_library("castor")
    if found:
        return found
    raise OSError("libcastor not found: set CASTOR_LIB to the path of libcastor.so")


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(find_library())
    P = ctypes.c_void_p
    D = ctypes.c_double
    DP = ctypes.POINTER(ctypes.c_double)
    S = ctypes.c_size_t
    decl = {
        "castor_version": (ctypes.c_uint, []),
        "castor_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "castor_new": (ctypes.c_int, [ctypes.POINTER(_Options), S, ctypes.POINTER(P),
                                      ctypes.c_char_p, S]),
        "castor_new_from_env": (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_char_p, S]),
        "castor_free": (None, [P]),
        "castor_step_groups": (ctypes.c_int, [P, D, D, S, DP, S, DP]),
        "castor_set_batch": (ctypes.c_int, [P, D, ctypes.c_int]),
        "castor_set_grad_bytes": (ctypes.c_int, [P, D]),
        "castor_get_decision": (ctypes.c_int, [P, ctypes.POINTER(_Decision), S]),
        "castor_get_stats": (ctypes.c_int, [P, ctypes.POINTER(_Stats), S]),
        "castor_flush": (ctypes.c_int, [P, ctypes.c_long]),
        "castor_checkpointed": (ctypes.c_int, [P]),
        "castor_finished": (ctypes.c_int, [P]),
        "castor_get_progress": (ctypes.c_int, [P, DP]),
        "castor_set_progress": (ctypes.c_int, [P, D]),
        "castor_save_state": (ctypes.c_int, [P, ctypes.c_char_p, S, ctypes.POINTER(S)]),
        "castor_load_state": (ctypes.c_int, [P, ctypes.c_char_p, S]),
    }
    for name, (res, args) in decl.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def _strerror(code):
    try:
        return _load().castor_strerror(code).decode()
    except OSError:
        return "error"


def version():
    """The library's version as (major, minor, patch)."""
    v = _load().castor_version()
    return (v // 10000, v // 100 % 100, v % 100)


class Decision:
    """What the job should run at (struct castor_decision)."""

    __slots__ = ("world_size", "nodes", "local_bsz", "accum_steps", "lr_gain",
                 "from_controller", "version")

    def __init__(self, d):
        for f in self.__slots__:
            setattr(self, f, getattr(d, f))

    def __repr__(self):
        return "Decision(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__) + ")"


class Castor:
    """One libcastor handle (struct castor). Create it with from_env() (the variables castor-node
    sets) or with keyword options (the fields of struct castor_options); close() frees it."""

    def __init__(self, **options):
        lib = _load()
        o = _Options()
        for key, value in options.items():
            if key not in dict(_Options._fields_):
                raise TypeError(f"unknown option {key}")
            if isinstance(value, str):
                value = value.encode()
            setattr(o, key, value)
        self._h = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(256)
        rc = lib.castor_new(ctypes.byref(o), ctypes.sizeof(o), ctypes.byref(self._h), msg, 256)
        if rc != 0:
            raise CastorError(rc, "castor_new: " + msg.value.decode(errors="replace"))

    @classmethod
    def from_env(cls):
        """A handle from CASTOR_URL, CASTOR_JOB, CASTOR_JOB_TOKEN(_FILE), CASTOR_RANK, ... (see
        castor_new_from_env). Raises CastorError naming the variable that is wrong."""
        lib = _load()
        self = cls.__new__(cls)
        self._h = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(256)
        rc = lib.castor_new_from_env(ctypes.byref(self._h), msg, 256)
        if rc != 0:
            raise CastorError(rc, "castor_new_from_env: " + msg.value.decode(errors="replace"))
        return self

    def close(self):
        """Stop reporting and free the handle (flush() first to send what is pending)."""
        if getattr(self, "_h", None) and self._h.value:
            _load().castor_free(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        self.close()

    def step(self, step_seconds, sync_seconds, micro_sqr=None, avg_sqr=None):
        """One optimizer step (castor_step_groups). micro_sqr: per parameter group, the squared
        norms of the step's micro-batch gradients of all replicas (a list of equal-length lists,
        or one list for a single group); avg_sqr: per group the squared norm of their average (a
        list, or a number for one group). None for a step without statistics. Returns 0 or the
        library's code for a step it skipped in part (bad input is never an exception)."""
        lib = _load()
        if micro_sqr is None:
            return lib.castor_step_groups(self._h, float(step_seconds), float(sync_seconds), 1,
                                          None, 0, None)
        if micro_sqr and not hasattr(micro_sqr[0], "__len__"):
            micro_sqr = [micro_sqr]
        if not hasattr(avg_sqr, "__len__"):
            avg_sqr = [avg_sqr]
        groups = len(micro_sqr)
        n = len(micro_sqr[0]) if groups else 0
        if groups == 0 or len(avg_sqr) != groups or any(len(m) != n for m in micro_sqr):
            return EINVAL
        flat = (ctypes.c_double * (groups * n))(*[float(x) for m in micro_sqr for x in m])
        avg = (ctypes.c_double * groups)(*[math.nan if a is None else float(a) for a in avg_sqr])
        return lib.castor_step_groups(self._h, float(step_seconds), float(sync_seconds), groups,
                                      flat, n, avg)

    def set_batch(self, local_bsz, accum_steps):
        """The job now runs local_bsz samples per micro-batch and accum_steps extra micro-batches."""
        rc = _load().castor_set_batch(self._h, float(local_bsz), int(accum_steps))
        if rc != 0:
            raise CastorError(rc, "castor_set_batch")

    def set_grad_bytes(self, nbytes):
        """The size of one replica's gradients in bytes: with the node's all-reduce bandwidth
        (CASTOR_ALLREDUCE_BUSBW) it gives the job's synchronisation prior."""
        rc = _load().castor_set_grad_bytes(self._h, float(nbytes))
        if rc != 0:
            raise CastorError(rc, "castor_set_grad_bytes")

    def decision(self):
        """The current Decision."""
        d = _Decision()
        rc = _load().castor_get_decision(self._h, ctypes.byref(d), ctypes.sizeof(d))
        if rc != 0:
            raise CastorError(rc, "castor_get_decision")
        return Decision(d)

    def stats(self):
        """The counters and current statistics as a dict (struct castor_stats)."""
        s = _Stats()
        rc = _load().castor_get_stats(self._h, ctypes.byref(s), ctypes.sizeof(s))
        if rc != 0:
            raise CastorError(rc, "castor_get_stats")
        return {f: getattr(s, f) for f, _ in _Stats._fields_}

    def flush(self, timeout=10.0):
        """Report now and wait at most timeout seconds; returns 0 or the library's code."""
        return _load().castor_flush(self._h, int(timeout * 1000))

    def checkpointed(self):
        """Tell the controller a checkpoint at the progress now is on disk; 0 or the library's
        code (never raises: training goes on)."""
        return _load().castor_checkpointed(self._h)

    def finished(self):
        """Tell the controller the job completed its work; 0 or the library's code."""
        return _load().castor_finished(self._h)

    @property
    def progress(self):
        out = ctypes.c_double()
        rc = _load().castor_get_progress(self._h, ctypes.byref(out))
        if rc != 0:
            raise CastorError(rc, "castor_get_progress")
        return out.value

    @progress.setter
    def progress(self, value):
        rc = _load().castor_set_progress(self._h, float(value))
        if rc != 0:
            raise CastorError(rc, "castor_set_progress")

    def save_state(self):
        """The state a restart keeps (progress, gradient statistics), as bytes."""
        lib = _load()
        need = ctypes.c_size_t()
        size = 4096
        while True:
            buf = ctypes.create_string_buffer(size)
            rc = lib.castor_save_state(self._h, buf, size, ctypes.byref(need))
            if rc == 0:
                return buf.raw[: need.value]
            if rc != ERANGE:
                raise CastorError(rc, "castor_save_state")
            size = need.value + 1

    def load_state(self, data):
        """Restore what save_state returned."""
        rc = _load().castor_load_state(self._h, data, len(data))
        if rc != 0:
            raise CastorError(rc, "castor_load_state")
