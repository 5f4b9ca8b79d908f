"""A custom container image: the job runs in an image you built, used as it is.

Shows: container_image="REGISTRY/IMAGE:TAG" (any value other than "bundled" and
"prebuilt"). Nothing of Kinetic's has to be in the image: it needs python3 and cloudpickle,
e.g. a Dockerfile of two lines:
    FROM python:3.12-slim
    RUN pip install cloudpickle
On a cluster the image must be pullable by the nodes. On the local backend the job runs
in the image only with container isolation on (KINETIC_CONTAINER=podman, docker or auto);
without it Kinetic says so and runs the job in a local Python environment.
Needs: a container runtime (podman or docker) and the network to pull IMAGE; without a
       runtime the job runs in a local Python environment instead, and says so.
Run:   KINETIC_CONTAINER=podman PYTHONPATH=python python3 examples/custom_image.py IMAGE
"""

import sys

import kinetic

IMAGE = sys.argv[1] if len(sys.argv) > 1 else "docker.io/library/python:3.12-slim"


@kinetic.run(accelerator="cpu", container_image=IMAGE)
def where_am_i():
    import os
    import platform

    in_container = os.path.exists("/run/.containerenv") or os.path.exists("/.dockerenv")
    return {"python": platform.python_version(), "in_container": in_container}


if __name__ == "__main__":
    got = where_am_i()
    print(f"ran in {IMAGE}: {got}")
