"""One step on neuron, then the script ends its own process the way ``sys.argv[1]`` says
(issue 28 item 4): os._exit(3), SIGKILL, or a forked child that raises out of the script after
its parent finished."""

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
