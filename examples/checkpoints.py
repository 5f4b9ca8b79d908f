"""Checkpoints: a job writes them under KINETIC_OUTPUT_DIR, this machine reads them back,
and a second job resumes from the last one.

Shows: KINETIC_OUTPUT_DIR inside the job (a per-job directory of the store, kept after the
job and its cleanup), handle.output_dir on the caller's side, and resuming by passing the
first job's outputs to the next as kinetic.Data.
Needs: nothing beyond this machine (the local backend).
Run:   PYTHONPATH=python python3 examples/checkpoints.py
       (on a gs:// store the outputs are gs://BUCKET/.../outputs/JOB_ID: read them with
       `gcloud storage cat`, or pass them on as Data(handle.output_dir + "/") as below.)
"""

import json
import os

import kinetic
from kinetic import Data


@kinetic.run(accelerator="cpu")
def train(steps, resume_from=None):
    out = os.environ["KINETIC_OUTPUT_DIR"]  # set by Kinetic in every job
    os.makedirs(out, exist_ok=True)
    state = {"step": 0, "loss": 10.0}
    if resume_from is not None:  # a path: the previous job's outputs, downloaded for us
        ckpts = sorted(n for n in os.listdir(resume_from) if n.startswith("ckpt-"))
        with open(os.path.join(resume_from, ckpts[-1])) as f:
            state = json.load(f)
        print(f"resumed from {ckpts[-1]} at step {state['step']}", flush=True)
    for _ in range(steps):
        state = {"step": state["step"] + 1, "loss": round(state["loss"] * 0.5, 6)}
        with open(os.path.join(out, "ckpt-%06d.json" % state["step"]), "w") as f:
            json.dump(state, f)
    return state


def read_checkpoints(output_dir):
    """The checkpoints of a finished job, read on this machine (a file:// store)."""
    if output_dir.startswith("gs://"):
        raise SystemExit(f"outputs are in {output_dir}: read them with gcloud storage")
    path = output_dir.removeprefix("file://")
    return {n: json.load(open(os.path.join(path, n))) for n in sorted(os.listdir(path))}


if __name__ == "__main__":
    first = train.run_async(3)
    print("first job:", first.result())
    ckpts = read_checkpoints(first.output_dir)  # still there after result() cleaned up
    print("checkpoints:", list(ckpts))
    assert list(ckpts) == ["ckpt-000001.json", "ckpt-000002.json", "ckpt-000003.json"]
    final = train(2, resume_from=Data(first.output_dir + "/"))
    print("resumed job:", final)
    assert final == {"step": 5, "loss": 0.3125}, final
