"""The local cluster's StorageClass `local-path`: a dynamic provisioner of local volumes, as clusters
without a cloud commonly run (Rancher's local-path-provisioner is the well-known one; this is a small
one of our own, so the tests need no image from a registry).

A claim of the class waits for its first consumer; once the scheduler picks the pod's node (the
claim's `volume.kubernetes.io/selected-node`), this makes a directory under the volumes directory
and a local PersistentVolume there, pinned to that node and bound to the claim. When a volume it made
is released (its claim deleted: reclaim policy Delete), it removes the directory and the volume.
It polls once a second: a test cluster's handful of claims need no watch.

Run by `k8s.up` as its own process: `python provisioner.py KUBECONFIG VOLUMES_DIR`.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

CLASS = "local-path"
PROVISIONER = "layerbench.local/local-path"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
WANTS = "volume.kubernetes.io/storage-provisioner"  # what the volume controller sets on a claim it hands out
MADE_BY = "pv.kubernetes.io/provisioned-by"


def storage_class() -> client.V1StorageClass:
    return client.V1StorageClass(
        metadata=client.V1ObjectMeta(name=CLASS),
        provisioner=PROVISIONER,
        reclaim_policy="Delete",
        volume_binding_mode="WaitForFirstConsumer",
    )


def volume(claim: client.V1PersistentVolumeClaim, path: Path) -> client.V1PersistentVolume:
    node = claim.metadata.annotations[SELECTED_NODE]
    hostname = client.V1NodeSelectorRequirement(key="kubernetes.io/hostname", operator="In", values=[node])
    meta = claim.metadata
    return client.V1PersistentVolume(
        metadata=client.V1ObjectMeta(name=f"pvc-{meta.uid}", annotations={MADE_BY: PROVISIONER}),
        spec=client.V1PersistentVolumeSpec(
            capacity={"storage": claim.spec.resources.requests["storage"]},
            access_modes=claim.spec.access_modes,
            persistent_volume_reclaim_policy="Delete",
            storage_class_name=CLASS,
            local=client.V1LocalVolumeSource(path=str(path)),
            node_affinity=client.V1VolumeNodeAffinity(
                required=client.V1NodeSelector(
                    node_selector_terms=[client.V1NodeSelectorTerm(match_expressions=[hostname])]
                )
            ),
            claim_ref=client.V1ObjectReference(namespace=meta.namespace, name=meta.name, uid=meta.uid),
        ),
    )


def provision(core: client.CoreV1Api, volumes: Path) -> None:
    for claim in core.list_persistent_volume_claim_for_all_namespaces().items:
        notes = claim.metadata.annotations or {}
        if claim.status.phase != "Pending" or notes.get(WANTS) != PROVISIONER or SELECTED_NODE not in notes:
            continue
        path = volumes / f"pvc-{claim.metadata.uid}"
        path.mkdir(mode=0o777, exist_ok=True)
        path.chmod(0o777)  # any pod's user may write, as local-path-provisioner's directories allow
        with contextlib.suppress(ApiException):  # made already, by the previous round
            core.create_persistent_volume(volume(claim, path))


def reclaim(core: client.CoreV1Api, volumes: Path) -> None:
    for pv in core.list_persistent_volume().items:
        mine = (pv.metadata.annotations or {}).get(MADE_BY) == PROVISIONER
        if mine and pv.status.phase == "Released":
            shutil.rmtree(volumes / pv.metadata.name, ignore_errors=True)
            with contextlib.suppress(ApiException):
                core.delete_persistent_volume(pv.metadata.name)


def main(kubeconfig: str, volumes: Path) -> None:
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    with contextlib.suppress(ApiException):  # there already: a restarted provisioner
        client.StorageV1Api(core.api_client).create_storage_class(storage_class())
    volumes.mkdir(exist_ok=True)
    while True:
        try:
            provision(core, volumes)
            reclaim(core, volumes)
        except ApiException as exc:  # the apiserver busy or restarting: the next round tries again
            print(f"provisioner: {exc.status} {exc.reason}", file=sys.stderr, flush=True)
        time.sleep(1.0)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
