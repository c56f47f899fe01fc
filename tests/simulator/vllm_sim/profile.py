"""Board profile: the JSON file that describes one simulated Jetson.

All times in the profile are *model* seconds (what the real board would take);
`time_scale` converts them to wall seconds so tests can run fast.
"""
import json
import os

DEFAULT_PROFILE_PATH = "/etc/jetson-sim/profile.json"
GIB = 1024 ** 3

# Keys with defaults; everything else is required.
_DEFAULTS = {
    "vllm_version": "0.20.1",
    "time_scale": 1.0,
    "seed": 0,
    "used_outside_vllm_bytes": 0,
    "step_overhead_s": 0.0,
    "draft_step_overhead_s": 0.0,
    "decode_compute_s_per_token_per_bparam": 0.0,
    "prefill_s_per_token_per_bparam": 0.0,
    "activation_overhead_bytes": 0,
    "cuda_graph_overhead_bytes": 0,
    "speculative_overhead_bytes": 0,
    "startup_s": 0.0,
    "ngram_propose_s": 0.0002,
    "natural_output_tokens": 256,
    "default_alpha": 0.1,
    "acceptance": [],
    # [{"contains": <text>, "scale": <factor>}]: a prompt containing the text scales every acceptance
    # probability of its request by the factor (the first rule that matches); acceptance follows the traffic
    "prompt_acceptance": [],
    "faults": {},
    "noise": {},
    "block_size": 16,
    # The cost of a batch-size schedule itself (num_speculative_tokens_per_batch_size), as a fraction of every
    # decode step's verify time while one is configured, whatever k the step runs (engine.py).
    "speculative_schedule_overhead": 0.0,
    # Where the stand-in announces a visible throttle to the board's sensor daemon, and the GPU
    # devfreq node that daemon shows (board_sysfs.py); without a throttle_file nothing is shown.
    "throttle_file": None,
    "gpu_devfreq": {},
    # Where the stand-in announces its draw (mW) to the sensor daemon, which scales the board's power
    # rails to it, and the draw model: idle_w, busy_w (any request running), per_seq_w (each running
    # sequence), draft_w (while it speculates). Without both, the rails keep the fixture's values.
    "power_file": None,
    "power": {},
    # false: the board starts with the GPU floor at the DVFS minimum (nobody ran jetson_clocks)
    "clocks_pinned": True,
}
_REQUIRED = ("name", "total_memory_bytes", "memory_bandwidth_bytes_per_s",
             "bandwidth_efficiency", "models")


class ProfileError(Exception):
    pass


class Model(object):
    """One entry of the profile's model table (a target, a draft or an EAGLE head)."""

    def __init__(self, name, spec):
        self.name = name
        self.weight_bytes = int(spec["weight_bytes"])
        self.params_b = float(spec.get("params_b", 0.0))
        self.kv_bytes_per_token = int(spec.get("kv_bytes_per_token", 0))
        self.vocab_size = int(spec.get("vocab_size", 32000))
        self.max_position_embeddings = int(spec.get("max_position_embeddings", 4096))
        self.model_type = spec.get("model_type", "llama")
        self.family = spec.get("family", name)
        # "eagle3" marks an EAGLE-3 head; such a model cannot be served as a target.
        self.kind = spec.get("kind", "causal_lm")
        self.compute_s_per_token = spec.get("compute_s_per_token")
        self.eagle3_target_families = spec.get("eagle3_target_families", [])


class Profile(object):
    def __init__(self, data, path="<memory>"):
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ProfileError("profile %s lacks %s" % (path, ", ".join(missing)))
        merged = dict(_DEFAULTS)
        merged.update(data)
        self.data = merged
        self.path = path
        for key, value in merged.items():
            if key not in ("models",):
                setattr(self, key, value)
        preset = merged.get("noise_preset")
        if preset:
            presets = merged.get("noise_presets") or {}
            if preset not in presets:
                raise ProfileError("profile %s: noise_preset %r is not one of its noise_presets (%s)"
                                   % (path, preset, ", ".join(sorted(presets)) or "none"))
            self.noise = dict(presets[preset])
        rules = merged.get("prompt_acceptance")
        if not isinstance(rules, list) or not all(
                isinstance(r, dict) and isinstance(r.get("contains"), str) and r["contains"]
                and isinstance(r.get("scale"), (int, float)) and not isinstance(r.get("scale"), bool)
                and r["scale"] >= 0 for r in rules):
            raise ProfileError("profile %s: prompt_acceptance must be a list of {\"contains\": <non-empty text>, "
                               "\"scale\": <number >= 0>}, got %r" % (path, rules))
        self.time_scale = float(self.time_scale)
        if self.time_scale <= 0:
            raise ProfileError("time_scale must be > 0")
        self.models = {}
        for name, spec in merged["models"].items():
            model = Model(name, spec)
            self.models[name] = model
            for alias in spec.get("aliases", []):
                self.models[alias] = model

    @property
    def version_tuple(self):
        return version_tuple(self.vllm_version)

    def find_model(self, name):
        """A model by HF id, alias, or a local directory whose basename matches."""
        if name in self.models:
            return self.models[name]
        base = os.path.basename(name.rstrip("/"))
        for key, model in self.models.items():
            if key.split("/")[-1] == base and (name.startswith("/") or name.startswith(".")):
                return model
        return None

    def alpha(self, target, draft_key):
        """Acceptance of a (target family, draft) pair: one probability for every position,
        or, when the entry has ``alpha_per_position``, the list of conditional probabilities
        (position i accepted given 1..i-1 were; the last value repeats for deeper positions).
        Real heads lose acceptance with depth, which is what makes the best k differ."""
        for entry in self.acceptance:
            if entry.get("draft") == draft_key and entry.get("target_family") in (
                    target.family, target.name, "*"):
                curve = entry.get("alpha_per_position")
                if curve:
                    return [float(a) for a in curve]
                return float(entry["alpha"])
        return float(self.default_alpha)

    def prompt_acceptance_scale(self, text):
        """The factor the profile's prompt_acceptance gives a prompt's acceptance (1.0 when no rule matches)."""
        for rule in self.prompt_acceptance or []:
            if rule.get("contains") and rule["contains"] in (text or ""):
                return float(rule.get("scale", 1.0))
        return 1.0

    def faults_for(self, speculative):
        """Fault settings that apply to this start (scoped by `when`)."""
        raw = self.faults or {}
        entries = raw if isinstance(raw, list) else [raw]
        active = {}
        for entry in entries:
            when = entry.get("when", "always")
            if when == "always" or (when == "speculative" and speculative) or (
                    when == "baseline" and not speculative):
                active.update({k: v for k, v in entry.items() if k != "when"})
        return active


def version_tuple(text):
    parts = []
    for piece in str(text).split("+", maxsplit=1)[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts[:3])


def load_profile(path=None):
    path = path or os.environ.get("JETSON_SIM_PROFILE") or DEFAULT_PROFILE_PATH
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError) as exc:
        raise ProfileError("cannot read simulator profile %s: %s" % (path, exc))
    except ValueError as exc:
        raise ProfileError("simulator profile %s is not valid JSON: %s" % (path, exc))
    profile = Profile(data, path)
    # Tests and the fleet can speed a board up without editing its file.
    override = os.environ.get("JETSON_SIM_TIME_SCALE")
    if override:
        profile.time_scale = float(override)
    return profile
