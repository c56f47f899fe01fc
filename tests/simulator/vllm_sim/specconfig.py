"""Validation of --speculative-config, with the messages vLLM/pydantic give."""
from .errors import SimExit, pydantic_error, traceback_lines
from .profile import version_tuple

# SpeculativeMethod literal: newest source, and the shorter list of 0.10-era releases.
METHODS_NEW = ["ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "custom_class",
               "eagle", "eagle3", "extract_hidden_states", "dflash", "ngram_gpu", "dspark",
               "mtp"]
METHODS_OLD = ["ngram", "eagle", "eagle3", "medusa", "mlp_speculator", "draft_model",
               "deepseek_mtp"]
KNOWN_KEYS = {
    "method", "model", "num_speculative_tokens", "draft_tensor_parallel_size",
    "tensor_parallel_size", "quantization", "max_model_len", "revision", "code_revision",
    "enforce_eager", "disable_padded_drafter_batch", "prompt_lookup_max", "prompt_lookup_min",
    "draft_sample_method", "rejection_sample_method", "attention_backend", "kv_cache_dtype",
    "moe_backend", "disable_by_batch_size", "speculative_token_tree", "disable_logprobs",
    "num_speculative_tokens_per_batch_size", "draft_load_config", "use_local_argmax_reduction",
}
# Methods whose drafter is a model loaded from `model`.
MODEL_METHODS = ("draft_model", "eagle", "eagle3", "medusa", "mlp_speculator")
CLS = "SpeculativeConfig"


SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"


class SpecSettings(object):
    def __init__(self, method, draft, k, alpha, schedule=None):
        self.method = method
        self.draft = draft  # profile Model, or None for ngram
        self.k = k
        self.alpha = alpha
        self.schedule = schedule  # [[start, end, k], ...] sorted, or None (static k)

    def k_at(self, batch_size):
        """vLLM's dense lookup (v1/spec_decode/dynamic/utils.py): the k of the last range starting at or below
        the batch size (gaps take the previous k, sizes after the last range its k), clamped to the maximum."""
        if not self.schedule:
            return self.k
        k = self.k
        for start, _end, value in self.schedule:
            if start <= batch_size:
                k = value
        return min(self.k, k)

    def describe(self):
        out = {"method": self.method, "model": self.draft.name if self.draft else None,
               "num_speculative_tokens": self.k}
        if self.schedule:
            out[SCHEDULE_KEY] = [tuple(e) for e in self.schedule]
        return out


def _engine_error(message):
    """A ValueError raised when the engine core builds the schedule's lookup (not at argument parsing)."""
    raise SimExit(1, traceback_lines("ValueError: " + message, where="vllm/v1/core/sched/scheduler.py"))


def validate_schedule(value):
    """validate_and_normalize_dynamic_sd_schedule (vLLM 0.32), with its messages."""
    if value is None:
        _engine_error("num_speculative_tokens_per_batch_size is required for dynamic speculative decoding.")
    if not isinstance(value, list):
        _engine_error("num_speculative_tokens_per_batch_size must be a non-empty list of (range_start, range_end, "
                      "num_speculative_tokens) entries.")
    if not value:
        _engine_error("num_speculative_tokens_per_batch_size must not be empty.")
    entries = []
    for entry in value:
        if not isinstance(entry, list) or len(entry) != 3:
            _engine_error("Each num_speculative_tokens_per_batch_size entry must be a 3-item sequence: "
                          "(range_start, range_end, num_speculative_tokens).")
        start, end, k = (int(v) for v in entry)
        if start <= 0 or end <= 0:
            _engine_error("Batch-size range (%d, %d) must be positive." % (start, end))
        if start > end:
            _engine_error("Batch-size range start must be <= end for (%d, %d, %d)." % (start, end, k))
        if k < 0:
            _engine_error("num_speculative_tokens_per_batch_size values must be >= 0.")
        entries.append([start, end, k])
    entries.sort(key=lambda e: e[0])
    for before, after in zip(entries, entries[1:]):
        if after[0] <= before[1]:
            _engine_error("Batch-size ranges must be non-overlapping and sorted.")
    if entries[0][0] != 1:
        _engine_error("The first batch-size range must start at 1 so every runtime batch size has a defined "
                      "schedule.")
    return entries


def _fail_pydantic(errors):
    lines = traceback_lines("")[:-1] + pydantic_error(CLS, errors)
    raise SimExit(1, lines)


def _value_error(message, cfg):
    """A ValueError raised in __post_init__, wrapped by pydantic as a value_error."""
    _fail_pydantic([("", "Value error, " + message, "value_error",
                     "ArgsKwargs((), %r)" % (cfg,), "ArgsKwargs")])


def _literal_message(options):
    quoted = ["'%s'" % o for o in options]
    return "Input should be " + ", ".join(quoted[:-1]) + " or " + quoted[-1]


def invalid_repo_message(name):
    return ("Invalid repository ID or local directory specified: '%s'.\n"
            "Please verify the following requirements:\n"
            "1. Provide a valid Hugging Face repository ID.\n"
            "2. Specify a local directory that contains a recognized configuration file.\n"
            "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
            "   - For Mistral models: ensure the presence of a 'params.json'." % name)


def validate(cfg, target, profile):
    """Return SpecSettings, or raise SimExit with vLLM's message."""
    version = version_tuple(profile.vllm_version)
    methods = METHODS_NEW if version >= (0, 11, 0) else METHODS_OLD
    known = KNOWN_KEYS if version >= (0, 32, 0) else KNOWN_KEYS - {SCHEDULE_KEY}
    unknown = sorted(set(cfg) - known)
    if unknown:
        _fail_pydantic([(key, "Unexpected keyword argument", "unexpected_keyword_argument",
                         repr(cfg[key]), type(cfg[key]).__name__) for key in unknown])
    errors = []
    method = cfg.get("method")
    if method is not None and method not in methods:
        errors.append(("method", _literal_message(methods), "literal_error", repr(method),
                       type(method).__name__))
    k = cfg.get("num_speculative_tokens")
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int):
            errors.append(("num_speculative_tokens",
                           "Input should be a valid integer", "int_type", repr(k),
                           type(k).__name__))
        elif k <= 0:
            errors.append(("num_speculative_tokens", "Input should be greater than 0",
                           "greater_than", repr(k), "int"))
    if errors:
        _fail_pydantic(errors)

    if "tensor_parallel_size" in cfg:
        _value_error("'tensor_parallel_size' is not a valid argument in the speculative_config. "
                     "Please pass 'draft_tensor_parallel_size' instead.", cfg)
    model_name = cfg.get("model")
    if method is None:
        # vLLM's auto-detection: ngram by name, else draft_model refined by the name.
        if model_name in ("ngram", "[ngram]"):
            method = "ngram"
        elif model_name is not None:
            low = model_name.lower()
            method = "eagle3" if "eagle3" in low else ("eagle" if "eagle-" in low else "draft_model")
        else:
            _value_error("num_speculative_tokens was provided but without speculative model.", cfg)

    if method == "ngram":
        lo, hi = cfg.get("prompt_lookup_min"), cfg.get("prompt_lookup_max")
        lo = lo if lo is not None else (hi if hi is not None else 5)
        hi = hi if hi is not None else lo
        if lo > hi:
            _value_error("prompt_lookup_min=%s must be <= prompt_lookup_max=%s" % (lo, hi), cfg)
        if k is None:
            _value_error("num_speculative_tokens must be provided with speculative model unless "
                         "the draft model config contains an n_predict parameter.", cfg)
        return _scheduled(SpecSettings("ngram", None, k, profile.alpha(target, "ngram")), cfg)

    if method not in MODEL_METHODS:
        _value_error("Unsupported speculative method: '%s' (not modelled by the Jetson simulator)"
                     % method, cfg)
    if model_name is None:
        _value_error("num_speculative_tokens was provided but without speculative model.", cfg)
    draft = profile.find_model(model_name)
    if draft is None:
        _value_error(invalid_repo_message(model_name), cfg)
    if k is None:
        _value_error("num_speculative_tokens must be provided with speculative model unless the "
                     "draft model config contains an n_predict parameter.", cfg)
    dtp = cfg.get("draft_tensor_parallel_size")
    if dtp is not None and dtp != 1:
        _value_error("speculative_draft_tensor_parallel_size=%s cannot be other value than 1 or "
                     "target model tensor_parallel_size" % dtp, cfg)

    if method == "draft_model":
        if version < (0, 14, 0):
            # V1 engines before draft models were re-added (issues #31883, #28384).
            raise SimExit(1, traceback_lines(
                "NotImplementedError: Speculative decoding with draft model is not supported yet. "
                "Please consider using other speculative decoding methods such as ngram, medusa, "
                "eagle, or mtp."))
        if draft.kind == "eagle3":
            _value_error("Model %s is an EAGLE-3 head; serve it with method 'eagle3' "
                         "(simulated check)" % draft.name, cfg)
        if draft.vocab_size != target.vocab_size:
            _value_error(
                "Target and draft model should have the same vocabulary size. Target model "
                "vocab_size=%d. Draft model vocab_size=%d. Using models with different tokenizers "
                "can cause out-of-bounds errors during speculative decoding."
                % (target.vocab_size, draft.vocab_size), cfg)
    elif method in ("eagle3", "eagle"):
        if version < (0, 10, 1) and target.model_type != "llama":
            _value_error("Eagle3 is only supported for ['llama'] models. Got "
                         "self.target_model_config.hf_text_config.model_type='%s'"
                         % target.model_type, cfg)
        if draft.kind != "eagle3" or (draft.eagle3_target_families and
                                      target.family not in draft.eagle3_target_families):
            raise SimExit(1, traceback_lines(
                "RuntimeError: Error(s) in loading state_dict for Eagle3LlamaForCausalLM: "
                "size mismatch: %s is not an EAGLE-3 head trained for %s (simulated check)"
                % (draft.name, target.name)))
    return _scheduled(SpecSettings(method, draft, k, profile.alpha(target, draft.name)), cfg)


def _scheduled(settings, cfg):
    """The batch-size schedule (vLLM 0.32's Dynamic SD), checked when the engine core starts."""
    if SCHEDULE_KEY in cfg:
        settings.schedule = validate_schedule(cfg[SCHEDULE_KEY])
    return settings
