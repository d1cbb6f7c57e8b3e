"""Running iptables/nft in child processes for the linux dataplane, with their failures
turned into the reference's wording."""

from __future__ import annotations

from cni_plugin import posix_shim as posix_shim
from cni_spec.errors import CNIError, internal

NOT_PERMITTED = "the linux dataplane needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)"


class CommandFailed(Exception):
    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        super().__init__(stderr.strip() or f"exit status {returncode}")
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr.strip()

    def reason(self) -> str:
        """The tool's answer, worded as Go prints an errno ("file exists")."""
        text = " ".join(self.stderr.splitlines())
        if text.startswith("RTNETLINK answers: "):
            text = text.removeprefix("RTNETLINK answers: ")
            text = text[:1].lower() + text[1:]
        return text.removeprefix("Error: ") or f"exit status {self.returncode}"


def which(tool: str) -> str | None:
    """The tool's path on $PATH (os.defpath without one), as shutil.which, without its
    import."""
    path = posix_shim.getenv("PATH")
    for directory in (path if path is not None else "/bin:/usr/bin").split(":"):
        candidate = posix_shim.join(directory or ".", tool)
        if posix_shim.isfile(candidate) and posix_shim.access(candidate, posix_shim.X_OK):
            return candidate
    return None


def run(argv: list[str], stdin: str = "") -> str:
    """Run a tool found on $PATH; its stdout, CommandFailed when it fails."""
    path = which(argv[0])
    if path is None:
        raise internal(f'exec: "{argv[0]}": executable file not found in $PATH')
    returncode, out, err = posix_shim.run_captured([path, *argv[1:]], stdin.encode(),
                                                posix_shim.environ_copy())
    stderr = err.decode(errors="replace")
    if returncode != 0:
        if "Operation not permitted" in stderr:
            raise CNIError(999, f"{' '.join(argv)}: operation not permitted", NOT_PERMITTED)
        raise CommandFailed(argv, returncode, stderr)
    return out.decode(errors="replace")
