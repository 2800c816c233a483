"""One step on neuron, then the script ends its own process the way ``sys.argv[1]`` says
(issue 28 item 4): os._exit(3), SIGKILL, a forked child that raises out of the script after
its parent finished, a forked child that calls sys.exit(7) (its parent waits for it and writes
its exit status to ``sys.argv[2]``), or a sleep (its pid written to ``sys.argv[2]``) until the
test signals ``torch-neuronx evaluate``."""

import os
import signal
import sys
import time

import torch

w = torch.nn.Parameter(torch.ones(3, device="neuron"))
opt = torch.optim.SGD([w], lr=0.1)
(w * 2).sum().backward()
opt.step()

mode = sys.argv[1]
if mode == "os_exit":
    os._exit(3)  # MARK-os-exit
elif mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "fork":
    if os.fork() == 0:  # the child outlives its parent's run, then raises out of the script
        with open(sys.argv[2], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(1)
        raise RuntimeError("raised in the child the script forked")
elif mode == "fork_exit":
    child = os.fork()
    if child == 0:
        sys.exit(7)
    _, status = os.waitpid(child, 0)
    with open(sys.argv[2], "w") as f:
        f.write(str(os.waitstatus_to_exitcode(status)))
elif mode == "sleep":
    with open(sys.argv[2] + ".part", "w") as f:
        f.write(str(os.getpid()))
    os.replace(sys.argv[2] + ".part", sys.argv[2])
    for _ in range(600):  # until the test's signal ends the run (bounded: 10 minutes)
        time.sleep(1)
