"""A multi-host program in JAX's style: every host runs the same function on its shard,
gradients are averaged across all of them, and host 0's value is the job's result.

Shows: KINETIC_HOST_INDEX and KINETIC_NUM_HOSTS (set by Kinetic on every host of a
multi-host job), jax.distributed.initialize() on a multi-host slice, a data-parallel step
with jax.pmap and lax.pmean. Where JAX is not installed the same arithmetic runs in plain
Python: on one host over every shard; on several hosts each host fits only the shards that
are its own (shard s belongs to host s % hosts) and prints its fit, without exchanging
gradients with the others (exchanging them is what jax.distributed and pmean add). The job
ends when every host has; its value is host 0's.
Needs: nothing for one host; two hosts need a cluster (kinetic up) or the test cluster.
Run:   PYTHONPATH=python python3 examples/multihost.py                # this machine, 1 host
       EXAMPLE_ACCELERATOR=tpu-v5litepod-2x4 EXAMPLE_BACKEND=pathways \
         PYTHONPATH=python python3 examples/multihost.py              # 2 hosts
"""

import os

import kinetic

SHARDS = 8  # data shards: split over all devices of all hosts
STEPS = 200


def shard_data(shard):
    """A shard of y = 3x + 1, the same on every host for a given shard number."""
    xs = [(shard * 16 + i) / 128.0 for i in range(16)]
    return xs, [3.0 * x + 1.0 for x in xs]


def grad(w, b, xs, ys):
    n = len(xs)
    dw = sum(2 * (w * x + b - y) * x for x, y in zip(xs, ys)) / n
    db = sum(2 * (w * x + b - y) for x, y in zip(xs, ys)) / n
    return dw, db


def fit_with_jax(host, hosts):
    import jax
    import jax.numpy as jnp

    if hosts > 1:
        jax.distributed.initialize()  # on a TPU slice the coordinator is found by itself
    n = jax.local_device_count()
    mine = my_shards(host, hosts)
    per = len(mine) // n
    data = [shard_data(s) for s in mine[: per * n]]
    xs = jnp.array([sum((d[0] for d in data[i * per:(i + 1) * per]), []) for i in range(n)])
    ys = jnp.array([sum((d[1] for d in data[i * per:(i + 1) * per]), []) for i in range(n)])

    def step(params, x, y):
        def loss(p):
            return jnp.mean((p[0] * x + p[1] - y) ** 2)
        g = jax.lax.pmean(jax.grad(loss)(params), "devices")  # averaged over every host
        return params - 0.5 * g

    pstep = jax.pmap(step, axis_name="devices")
    params = jnp.zeros((n, 2))
    for _ in range(STEPS):
        params = pstep(params, xs, ys)
    return float(params[0][0]), float(params[0][1]), "jax"


def my_shards(host, hosts):
    """The shards host works on: shard s belongs to host s % hosts."""
    return [s for s in range(SHARDS) if s % hosts == host]


def fit_in_python(host, hosts):
    """Plain Python over this host's shards (all of them on one host). The hosts do not
    talk to each other here: each averages the gradients of its own shards only."""
    w = b = 0.0
    shards = [shard_data(s) for s in my_shards(host, hosts)]
    for _ in range(STEPS):
        gs = [grad(w, b, xs, ys) for xs, ys in shards]  # one gradient per shard...
        w -= 0.5 * sum(g[0] for g in gs) / len(gs)  # ...averaged, as pmean does
        b -= 0.5 * sum(g[1] for g in gs) / len(gs)
    return w, b, "python"


@kinetic.run(accelerator=os.environ.get("EXAMPLE_ACCELERATOR", "cpu"), backend=os.environ.get("EXAMPLE_BACKEND"))
def fit():
    host = int(os.environ.get("KINETIC_HOST_INDEX", "0"))
    hosts = int(os.environ.get("KINETIC_NUM_HOSTS", "1"))
    try:
        w, b, how = fit_with_jax(host, hosts)
    except ImportError:
        w, b, how = fit_in_python(host, hosts)
    print(f"host {host}/{hosts} ({how}): w={w:.3f} b={b:.3f} from shards {my_shards(host, hosts)}", flush=True)
    return {"w": round(w, 2), "b": round(b, 2), "hosts": hosts, "with": how}


if __name__ == "__main__":
    got = fit()
    print("fitted:", got)
    assert (got["w"], got["b"]) == (3.0, 1.0), got
