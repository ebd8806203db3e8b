"""selmix-torch: the reference PyTorch worker of the selmix worker protocol
(docs/worker-protocol.md).

``python -m selmix_torch`` (or the ``selmix-worker`` command, or the script
workers/torch/selmix_worker.py in a checkout) runs it. Modules: ``worker``
the requests' work and ``main``; ``trainer_state`` the trainer's state, the
SGD step and save/load; ``protocol`` serving requests, replies and errors,
framed by ``frames``; ``requests`` the requests' classes (those of
core/worker/requests.go); ``options`` the command line; ``sampling`` each
mode's draws and the training stream; ``loader`` the data path and the
per-sample seeds; ``dist`` the ranks; ``recipes`` the recipe contract and
the built-in recipes.
"""
