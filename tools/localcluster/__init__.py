"""Local clusters for layerbench's tests: Kubernetes and Docker Swarm, their nodes in network namespaces."""
