"""vLLM-shaped log lines on stderr ("INFO 08-28 07:39:28 [file.py:123] message")."""
import os
import sys
import time

_PID = os.getpid()


def _stamp():
    return time.strftime("%m-%d %H:%M:%S")


def format_line(level, where, message, proc="APIServer"):
    """One line the way vLLM V1 writes it: process tag, level, time, source location."""
    return "(%s pid=%d) %s %s [%s] %s" % (proc, _PID, level, _stamp(), where, message)


def log(level, where, message, proc="APIServer"):
    sys.stderr.write(format_line(level, where, message, proc) + "\n")
    sys.stderr.flush()


def info(where, message, proc="APIServer"):
    log("INFO", where, message, proc)


def warning(where, message, proc="APIServer"):
    log("WARNING", where, message, proc)


def error(where, message, proc="APIServer"):
    log("ERROR", where, message, proc)


def raw(text):
    """Lines vLLM prints without its formatter (uvicorn, tracebacks, argparse)."""
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()
