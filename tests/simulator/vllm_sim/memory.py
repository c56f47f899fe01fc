"""Startup memory checks as vLLM runs them on a unified-memory Jetson.

vLLM reserves `gpu_memory_utilization x total` up front. On Jetson the GPU shares
RAM with the OS, so "free on device" is the board's total minus what the OS and
other processes already hold (`used_outside_vllm_bytes`).
"""
from .errors import SimExit, traceback_lines
from .logs import format_line

GIB = float(1024 ** 3)
CONSERVING = ("See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
              "for more details.")


class MemoryPlan(object):
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _gib(value):
    return "%.2f" % (value / GIB)


def _engine_failure(message):
    # The check runs in the EngineCore process; the API server then gives up.
    return SimExit(1, [
        format_line("ERROR", "core.py:708", "EngineCore failed to start.", "EngineCore_DP0"),
    ] + traceback_lines(message, "vllm/v1/engine/core.py") + [
        format_line("ERROR", "api_server.py:1260", "Engine core initialization failed."),
        "RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}",
    ])


def check_free(profile, util):
    """The worker's first check, before any weights load (vllm/v1/worker/gpu_worker.py)."""
    total = float(profile.total_memory_bytes)
    free = total - float(profile.used_outside_vllm_bytes)
    requested = util * total
    if free < requested:
        raise _engine_failure(
            "ValueError: Free memory on device (%s/%s GiB) on startup is less than desired GPU "
            "memory utilization (%s, %s GiB). Decrease GPU memory utilization or reduce GPU "
            "memory used by other processes." % (_gib(free), _gib(total), util, _gib(requested)))
    return total, free, requested


def plan(profile, target, spec, util, max_model_len, enforce_eager):
    """Weights, then the KV-cache check of vllm/v1/core/kv_cache_utils.py."""
    total, free, requested = check_free(profile, util)
    weights = float(target.weight_bytes)
    kv_per_token = target.kv_bytes_per_token
    overhead = float(profile.activation_overhead_bytes)
    if not enforce_eager:
        overhead += profile.cuda_graph_overhead_bytes
    if spec is not None:
        overhead += profile.speculative_overhead_bytes
        if spec.draft is not None:
            weights += spec.draft.weight_bytes
            # The drafter keeps its own KV cache for every token of the sequence.
            kv_per_token += spec.draft.kv_bytes_per_token
    kv_budget = requested - weights - overhead
    block = int(profile.block_size)
    if kv_budget <= 0:
        raise _engine_failure(
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine. " + CONSERVING)
    page = kv_per_token * block
    needed = -(-max_model_len // block) * page
    if needed > kv_budget:
        estimated = int(kv_budget // page) * block
        estimated_msg = ""
        if estimated > 0:
            estimated_msg = ("Based on the available memory, the estimated maximum model "
                             "length is %d. " % estimated)
        raise _engine_failure(
            "ValueError: To serve at least one request with the models's max seq len (%d), "
            "(%s GiB KV cache is needed, which is larger than the available KV cache memory "
            "(%s GiB). %sTry increasing `gpu_memory_utilization` or decreasing `max_model_len` "
            "when initializing the engine. %s"
            % (max_model_len, _gib(needed), _gib(kv_budget), estimated_msg, CONSERVING))
    num_blocks = int(kv_budget // page)
    return MemoryPlan(total=total, free=free, requested=requested, weights=weights,
                      overhead=overhead, kv_budget=kv_budget, num_blocks=num_blocks,
                      kv_tokens=num_blocks * block, kv_bytes_per_token=kv_per_token,
                      block_size=block)


def oom_failure(profile, spec):
    """`oom_when_speculative` fault: the CUDA allocator fails while loading the drafter."""
    total = profile.total_memory_bytes / GIB
    want = (spec.draft.weight_bytes if spec and spec.draft else 512 * 1024 ** 2) / float(1024 ** 2)
    return _engine_failure(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f MiB. GPU 0 has a "
        "total capacity of %.2f GiB of which 18.00 MiB is free. Including non-PyTorch memory, "
        "this process has %.2f GiB memory in use." % (want, total, total * 0.9))
