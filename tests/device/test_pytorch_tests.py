"""tools/pytorch_tests.py: the runner of PyTorch's own device-generic test files (CPU vs neuron).

The real files are not in this repository; these tests drive the runner on a small synthetic file
(a pass, a failure, a skip, a test that kills its process, one that overruns the per-test limit)
and check the pairing, the grouping and the report section."""

import json
import textwrap

from torch_neuronx.tools import pytorch_tests as pt

_FAKE = """
import os, time, unittest

class TestFakeCPU(unittest.TestCase):
    def test_ok_cpu_float32(self):
        pass

    def test_bad_cpu(self):
        with self.assertRaises(RuntimeError):
            pass

    def test_skip_cpu(self):
        raise unittest.SkipTest("Only runs on cuda")

    def test_crash_cpu(self):
        os.abort()

    def test_slow_cpu(self):
        time.sleep(30)

    def test_z_after_crash_cpu(self):
        pass
"""


def test_runner_records_outcomes_and_survives_a_crash(tmp_path):
    src = tmp_path / "tests"
    src.mkdir()
    (src / "test_fake.py").write_text(textwrap.dedent(_FAKE))
    out = tmp_path / "out"
    out.mkdir()
    r = pt.run_file(str(src), "test_fake.py", "cpu", str(out), file_timeout=120, test_timeout=2)
    by_name = {k.split("::")[-1]: v["outcome"] for k, v in r["results"].items()}
    assert by_name == {
        "test_ok_cpu_float32": "passed",
        "test_bad_cpu": "failed",
        "test_skip_cpu": "skipped",
        "test_crash_cpu": "crash",
        "test_slow_cpu": "failed",  # the per-test limit turns a stall into a failure
        "test_z_after_crash_cpu": "passed",  # the run resumed after the crash
    }
    assert any("crash" in n for n in r["notes"])
    slow = next(v for k, v in r["results"].items() if k.endswith("test_slow_cpu"))
    assert "per-test limit" in slow["msg"]
    assert list(out.glob("test_fake.cpu.*.xml"))  # pytest's JUnit file of each run segment


def test_pairing_and_grouping():
    assert pt.test_key("f.py::TestXCPU::test_a_cpu_float32") == pt.test_key(
        "f.py::TestXPRIVATEUSE1::test_a_neuron_float32"
    )
    assert pt.test_key("f.py::TestXCPU::test_a_cpu") != pt.test_key("f.py::TestXCPU::test_b_cpu")
    assert pt.classify("t", "AssertionError: RuntimeError not raised", "failed").startswith(
        "argument validation"
    )
    assert pt.classify(
        "test_sparse_add", "NotImplementedError: ... not supported on the neuron device", "failed"
    ).startswith("policy: sparse")
    # a quantized failure without the backend's own clear error is not a policy exclusion
    assert pt.classify(
        "test_flip", "empty_strided not supported on quantized tensors", "failed"
    ) == ("quantized")
    # an accelerator-consistent exclusion needs both the listed test and its message
    same_device = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, neuron:0 and cpu! (when checking arguments for aten::index_fill_)"
    )
    cause = pt.classify(
        "f.py::T::test_stable_sort_against_numpy_neuron_int8", same_device, "failed"
    )
    assert cause.startswith(pt.ACCELERATOR) and "CUDA refuses the same call" in cause
    assert not pt.classify("f.py::T::test_other_neuron", same_device, "failed").startswith(
        pt.ACCELERATOR
    )
    assert not pt.classify(
        "f.py::T::test_stable_sort_against_numpy_neuron_int8", "AssertionError: x", "failed"
    ).startswith(pt.ACCELERATOR)


def _run(results):
    return {"results": results, "wall_s": 1.0, "notes": []}


def test_compare_and_report(tmp_path):
    cpu = {
        "f.py::TCPU::test_a_cpu": {"outcome": "passed"},
        "f.py::TCPU::test_b_cpu": {"outcome": "passed"},
        "f.py::TCPU::test_c_cpu": {"outcome": "failed"},
        "f.py::TCPU::test_sparse_cpu": {"outcome": "passed"},
        "f.py::TCPU::test_stable_sort_against_numpy_cpu": {"outcome": "passed"},
    }
    neu = {
        "f.py::TPRIVATEUSE1::test_a_neuron": {"id": "a", "outcome": "passed", "msg": ""},
        "f.py::TPRIVATEUSE1::test_b_neuron": {
            "id": "f.py::TPRIVATEUSE1::test_b_neuron",
            "outcome": "failed",
            "msg": "AssertionError: RuntimeError not raised",
        },
        "f.py::TPRIVATEUSE1::test_c_neuron": {"id": "c", "outcome": "failed", "msg": "x"},
        "f.py::TPRIVATEUSE1::test_sparse_neuron": {
            "id": "f.py::TPRIVATEUSE1::test_sparse_neuron",
            "outcome": "failed",
            "msg": "NotImplementedError: torch.sparse tensors are not supported on neuron",
        },
        "f.py::TPRIVATEUSE1::test_stable_sort_against_numpy_neuron": {
            "id": "f.py::TPRIVATEUSE1::test_stable_sort_against_numpy_neuron",
            "outcome": "failed",
            "msg": "RuntimeError: Expected all tensors to be on the same device, but found at least "
            "two devices, neuron:0 and cpu! (when checking arguments for aten::index_fill_)",
        },
    }
    s = pt.compare({"f.py": {"cpu": _run(cpu), "neuron": _run(neu)}})["f.py"]
    assert s["cpu_passes"] == 4
    assert [e["id"].split("::")[-1] for e in s["cpu_pass_neuron_fail"]] == ["test_b_neuron"]
    assert len(s["cpu_pass_neuron_policy"]) == 1  # the CPU failure test_c is not counted
    assert len(s["cpu_pass_neuron_accelerator"]) == 1
    section = pt.render({"f.py": s}, "test source")
    assert "| f.py | 4 / 5 | 1 / 5 | 1 of 4 | 1 | 1 |" in section
    assert "Accelerator-consistent exclusions" in section and "test skips this branch" in section
    doc = tmp_path / "coverage.md"
    doc.write_text("# Coverage\n\nrest\n")
    pt.write_docs(str(doc), section)
    pt.write_docs(str(doc), section)  # replaces its own section, does not append twice
    text = doc.read_text()
    assert text.count("pytorch-tests:begin") == 1 and text.startswith("# Coverage")
    assert pt.preserved_section(str(doc)).strip() == section.strip()
    json.dumps(s)  # the summary is plain data (written to summary.json)
