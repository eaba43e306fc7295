"""More patience for SAM CLI with a function container under qemu (installed by scripts/stack.sh).

`sam local invoke` posts the event to AWS's Runtime Interface Emulator in the function's
container through Docker's published port. SAM first waits for that port to take a connection,
but Docker's userland proxy takes one at once, before the emulator inside listens; SAM then
posts three times, 0.1, 0.2 and 0.4 s apart (samcli.lib.utils.retry, its only use), and gives up:
"No response from invoke container". An arm64 function on an x86_64 machine runs under qemu,
where the emulator starts to listen 0.5 to 1 s after its container starts, so SAM gives up on
about every other invocation. With six tries (0.1 to 3.2 s apart, 6.3 s in all) the emulator has
time to start; a container that never answers still fails, 6 s later.

This file and its `.pth` go into the SAM CLI's virtualenv; the `.pth` imports it when Python
starts, before SAM imports the module that applies the decorator.
"""

try:
    import samcli.lib.utils.retry as _samcli_retry
except ImportError:  # not SAM's virtualenv
    _samcli_retry = None

ATTEMPTS = 6

if _samcli_retry is not None and not getattr(_samcli_retry.retry, "patient", False):
    _original = _samcli_retry.retry

    def retry(*args, **kwargs):
        # SAM's signature today: retry(exc, attempts=3, delay=0.05, exc_raise=..., exc_raise_msg=...)
        kwargs["attempts"] = max(kwargs.get("attempts", 3), ATTEMPTS)
        return _original(*args, **kwargs)

    retry.patient = True
    _samcli_retry.retry = retry
