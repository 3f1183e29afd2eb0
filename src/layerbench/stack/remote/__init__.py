"""Remote devices: a storage host on its own network namespace, a transport's target and client
(layer.py puts them together as the stack's device layer)."""
