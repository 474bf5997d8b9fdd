"""How a failure reaches the user: one sentence that names the file, flag or value and the fix.

* `UserError`: a failure the user can fix (bad input, a damaged file, a full disk, a setting that
  cannot work). Its message is that sentence; code anywhere raises it where it knows the file or
  flag, so the message can name them. It is a `ValueError`, the project's exception for bad
  values, which `run_command` reports the same way.
* `no_space_error(path, err)`: the project's sentence for a full disk while writing `path`.
* `run_command(main)`: what every runner calls instead of `absl.app.run(main)`. A `UserError`
  ends the command with its sentence as the last line of stderr and exit status 1, without a
  traceback; faults that reach it unexplained (a full disk, a damaged file, memory) are named
  as well as it can; any other exception is a bug: its traceback, then one line saying so.

It imports TensorFlow only to recognise TensorFlow's errors, and only when the command has
already loaded TensorFlow, so the TensorFlow-free data tools stay so.
"""

import errno
import os
import sys
import traceback

from absl import app, logging


class UserError(ValueError):
    """A failure the user can fix; the message says what happened, to which file, and what to do."""


def no_space_error(path, err=None):
    """The `UserError` for a full disk while writing `path` (err: the OSError, if any)."""
    detail = f" ({err})" if err is not None and str(err) else ""
    return UserError(
        f"No space left on the device while writing {path}{detail}: free space there or "
        "choose an output directory on another disk, then run the command again."
    )


def out_of_memory_sentence(detail):
    """The user's sentence for a step that ran out of memory (`detail`: what TensorFlow said)."""
    return (
        f"Out of memory in a training or inference step ({detail}): pass "
        "--num_accumulation_steps=auto (or a larger number) or --gradient_checkpointing, or "
        "lower --train_batch_size or --max_seq_length (training/memory_plan.py estimates what "
        "fits: --print_memory_plan)."
    )


def is_no_space(err):
    """True if `err` (an OSError or a TensorFlow error) reports a full disk."""
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "No space left on device" in str(err) or "Disk quota exceeded" in str(err)


def _tensorflow_errors():
    tf = sys.modules.get("tensorflow")
    return getattr(tf, "errors", None) if tf is not None else None


def first_line(err):
    """The first line of an exception's message (its type's name if it has none), for the
    one-sentence errors that quote what a library said."""
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def explain(err):
    """The user's sentence for `err` if it is a fault this module can name, else None."""
    if is_no_space(err):
        return str(no_space_error(getattr(err, "filename", None) or "a file", None))
    tf_errors = _tensorflow_errors()
    if tf_errors is not None:
        if isinstance(err, tf_errors.DataLossError):
            return (
                f"A file is damaged or truncated ({first_line(err)}): restore it from a good "
                "copy or write it again."
            )
        if isinstance(err, tf_errors.ResourceExhaustedError):
            return out_of_memory_sentence(first_line(err))
    if isinstance(err, (ValueError, FileExistsError)):
        # The project raises ValueError for bad values with its own sentence (UserError is one).
        return str(err)
    if isinstance(err, OSError) and err.filename and err.errno in (errno.ENOENT, errno.EACCES):
        reason = "does not exist" if err.errno == errno.ENOENT else "cannot be read or written"
        return f"{err.filename} {reason}: check the path in the command line."
    return None


def _report(message, status):
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "bert"
    sys.stderr.flush()
    sys.stderr.write(f"{program}: error: {message}\n")
    sys.stderr.flush()
    # os._exit: TensorFlow's background threads (input prefetching, collectives waiting on a
    # dead peer) must not keep a failed command alive or print after the sentence.
    sys.stdout.flush()
    os._exit(status)


def _guarded(main):
    def wrapped(argv):
        try:
            return main(argv)
        except (SystemExit, app.UsageError):
            raise
        except KeyboardInterrupt:
            _report("interrupted.", 130)
        except Exception as err:  # noqa: BLE001 - every failure ends in one sentence
            message = explain(err)
            if message is None:
                traceback.print_exc()
                message = (
                    f"internal error ({type(err).__name__}: {first_line(err)}); this is a bug "
                    "in the project: please report it with the command line above."
                )
            else:
                logging.debug("Failure behind the message:", exc_info=True)
            _report(message, 1)

    return wrapped


def run_command(main):
    """Runs an absl `main(argv)` like `app.run`, ending any failure in one sentence (see above)."""
    app.run(_guarded(main))
