"""Debugging a job: submit with debug=True, attach VS Code (or any DAP client), step through.

Shows: debug=True and debug_wait= (seconds the job waits for a debugger before it fails),
JobHandle.debug_attach() returning a session (host, port, and the launch.json
configuration with the path mappings), and result() once the debugger lets the job go.
The job's Python needs debugpy (Debian: apt-get install python3-debugpy).
Needs: interactive: it waits (debug_wait) for VS Code or another DAP client to attach,
       and debugpy in the job's Python.
Run:   PYTHONPATH=python python3 examples/debug_attach.py
       then in VS Code: add the printed configuration to .vscode/launch.json, set a
       breakpoint in train() below, and start "Kinetic: train (job-...)".
       (`kinetic jobs debug JOB_ID` does the same from a shell.)
"""

import kinetic


@kinetic.run(accelerator="cpu", debug=True, debug_wait=300)
def train(lr, steps):
    loss = 1.0
    for step in range(steps):
        loss = loss * (1 - lr)  # a good line for a breakpoint: look at step and loss
    return round(loss, 6)


if __name__ == "__main__":
    handle = train.run_async(0.5, 3)
    with handle.debug_attach() as session:  # waits until debugpy listens in the job
        print(session.launch_json())
        print(f"debugger listening for job {handle.job_id} at {session.host}:{session.port}", flush=True)
        print("the job runs once a debugger attaches; waiting for the result...", flush=True)
        value = handle.result(timeout=600)
    print(f"result: {value}")
    assert value == 0.125
    handle.cleanup()  # debug jobs are kept after result() so you can look at them; clean up
