"""Stand-in for `vllm serve` on a simulated NVIDIA Jetson board.

Standard library only (Python 3.8+). Nothing here loads weights or touches a GPU:
timings come from a physical model of the board described by a JSON profile.
"""

SIMULATOR_VERSION = "1.0"
