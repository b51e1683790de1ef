"""What the request rate limiter costs: requests per second of a cheap authenticated endpoint
(``GET /api/public/v2/account/features``) with the limiter off, on with the in-memory store,
and on with the Redis store, measured in the same run over real HTTP, and the server's CPU
time per request (which a busy machine disturbs far less than the rate).

Starts three ``python -m dialscore serve --no-worker`` processes on one SQLite database in a
temporary data directory (the third with ``DIALSCORE_REDIS_URL``), creates an enterprise
client whose tiers are lifted so no request is refused, then measures rounds of
``--requests`` requests over ``--connections`` keep-alive connections against each server in
turn (the order rotates each round, so drift in the machine's speed falls on every variant
alike). Prints each variant's median rate over ``--rounds`` rounds and its ratio to "off",
then each variant's median CPU time per request in its server process (read from /proc, so
on Linux) and what the limiter adds to it.

The client is a minimal HTTP/1.1 loop on asyncio streams, so that the client's own cost stays
small next to the server's. Every wait is bounded and the run stops after ``--timeout``
seconds; servers are stopped, Redis keys and the data directory removed in every case.

    python bench/ratelimit_overhead.py [--rounds 7] [--requests 3000] [--connections 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import redis

from embedded import BenchError, Deadline, cli, free_port, running_server, server_env

PATH = "/api/public/v2/account/features"
LIFTED = ["--per-second", "1000000000", "--per-minute", "1000000000", "--per-day", "1000000000"]


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user and system, every thread) a process has used so far; None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _connection(port: int, request: bytes, count: int, deadline: Deadline) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for _ in range(count):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head[9:12]
            if status != b"200":
                raise BenchError(f"the server answered {status.decode()} on port {port}")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            deadline.check("sending requests")
    finally:
        writer.close()


async def _round(port: int, api_key: str, requests: int, connections: int, dl: Deadline) -> float:
    request = (
        f"GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {api_key}\r\n\r\n"
    ).encode()
    share = requests // connections
    started = time.perf_counter()
    await asyncio.gather(*(_connection(port, request, share, dl) for _ in range(connections)))
    return share * connections / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=3000, help="requests per round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    deadline = Deadline(args.timeout)

    workdir = Path(tempfile.mkdtemp(prefix="dialscore-bench-"))
    namespace = f"dialscore-bench-{uuid.uuid4().hex[:10]}"
    try:
        env = server_env(workdir / "var")
        cli(["migrate"], env, workdir, deadline)
        created = cli(
            ["admin", "create-client", "--name", "Bench", "--plan", "enterprise"],
            env,
            workdir,
            deadline,
        )
        lift = ["admin", "set-limits", "--client", created["clientId"], *LIFTED]
        cli(lift, env, workdir, deadline)
        variants = {
            "off": server_env(workdir / "var", RATE_LIMIT_ENABLED="false"),
            "memory": server_env(workdir / "var"),
            "redis": server_env(
                workdir / "var", REDIS_URL=args.redis_url, REDIS_NAMESPACE=namespace
            ),
        }
        ports = {name: free_port() for name in variants}
        rates: dict[str, list[float]] = {name: [] for name in variants}
        # CPU microseconds per request of each round, in the variant's server process.
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        pids: dict[str, int] = {}
        with ExitStack() as stack:
            for name, variant_env in variants.items():
                pids[name] = stack.enter_context(
                    running_server(
                        variant_env,
                        workdir,
                        ports[name],
                        deadline,
                        args=("--no-worker",),
                        log_name=f"server-{name}.log",
                    )
                ).pid
            names = list(variants)
            # One unmeasured round each: connections, caches and the script load warm up.
            for name in names:
                asyncio.run(_round(ports[name], created["apiKey"], 500, args.connections, deadline))
            for round_number in range(args.rounds):
                shift = round_number % len(names)
                for name in names[shift:] + names[:shift]:
                    before = cpu_seconds(pids[name])
                    rate = asyncio.run(
                        _round(
                            ports[name],
                            created["apiKey"],
                            args.requests,
                            args.connections,
                            deadline,
                        )
                    )
                    rates[name].append(rate)
                    after = cpu_seconds(pids[name])
                    if before is not None and after is not None:
                        sent = args.requests // args.connections * args.connections
                        cpu[name].append((after - before) / sent * 1e6)
        off = statistics.median(rates["off"])
        print(
            f"GET {PATH}, {args.rounds} rounds of {args.requests} requests over "
            f"{args.connections} connections, median requests/s:"
        )
        for name in names:
            median = statistics.median(rates[name])
            cost = (1 - median / off) * 100
            spread = f"{min(rates[name]):.0f}-{max(rates[name]):.0f}"
            line = f"  limiter {name:<6} {median:7.0f} req/s (rounds {spread})"
            if name != "off":
                line += f"  ratio to off {median / off:.3f} (cost {cost:+.1f} %)"
            print(line)
        if all(cpu.values()):
            off_cpu = statistics.median(cpu["off"])
            print("server CPU time per request, median of the rounds:")
            for name in names:
                median = statistics.median(cpu[name])
                spread = f"{min(cpu[name]):.0f}-{max(cpu[name]):.0f}"
                line = f"  limiter {name:<6} {median:7.0f} us (rounds {spread})"
                if name != "off":
                    line += f"  {median - off_cpu:+.0f} us over off ({median / off_cpu - 1:+.1%})"
                print(line)
        return 0
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        for log in sorted(workdir.glob("server-*.log")):
            print(f"--- {log.name} ---\n{log.read_text(errors='replace')[-3000:]}", file=sys.stderr)
        return 1
    finally:
        client = redis.Redis.from_url(args.redis_url)
        try:
            keys = list(client.scan_iter(match=f"{namespace}*", count=500))
            if keys:
                client.delete(*keys)
        finally:
            client.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
