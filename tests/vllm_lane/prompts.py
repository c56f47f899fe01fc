"""Prompts shared by build_models.py (tuning the perturbed draft) and lane.py (benchmarks).

Plain stdlib module: lane.py imports it under the project venv, build_models.py under the
lane venv. Editing it changes the model cache key (build_models.py hashes it).
"""

# Sequential streams sent by the benchmark client, each MAX_TOKENS long, temperature 0.
PROMPTS = [
    "the quiet river runs past the old mill and the",
    "a small robot walks into the garden where seven",
    "every board in the fleet reports its speed to the",
    "under the bright moon the farmer counts the silver",
    "she opened the heavy door and saw a green",
]
MAX_TOKENS = 128
NUM_SPECULATIVE_TOKENS = 3
