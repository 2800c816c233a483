"""docs/nki.md's coverage table is the one generated from the code
(``torch-neuronx nki-coverage``), and every reference name exists in the package."""

import os

from torch_neuronx.tools import nki_coverage

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "nki.md")


def test_docs_nki_md_has_the_generated_table():
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    start, end = text.index(nki_coverage.BEGIN), text.index(nki_coverage.END)
    in_doc = text[start : end + len(nki_coverage.END)]
    assert in_doc == nki_coverage.markdown(), (
        "docs/nki.md's coverage table is stale: regenerate it with "
        "`torch-neuronx nki-coverage` and paste it between the BEGIN/END markers"
    )


def test_every_reference_name_exists_and_stubs_are_not_covered():
    rows = nki_coverage.rows()
    assert not [r["name"] for r in rows if r["status"] == "missing"]
    status = {r["name"]: r["status"] for r in rows}
    assert status["tensor_tensor_scan"] == "covered"
    assert status["nonzero_with_count"] == "covered"
    assert status["sendrecv"] == "covered"  # the LNC pair runs as coroutines (lockstep.py)
    assert status["nc_matmul_mx"] == status["quantize_mx"] == "covered"
    assert not [r["name"] for r in rows if r["status"] != "covered"]  # all of 2.33
    assert status["topk"] == "covered"
    assert status["gather_flattened"] == "covered"
    for n in ("while_loop", "register_alloc", "dma_compute", "core_barrier"):
        assert status[n] == "covered"
    # the tensor class, with the dynamic forms of its methods (issue 24)
    tensor = {r["name"]: r for r in rows if r["group"] == "NkiTensor"}
    for n in ("select", "vector_select", "ap", "indirect", "rearrange", "is_indirect"):
        assert tensor[n]["status"] == "covered"
    for n in ("select(dim, tile or register)", "ap(scalar_offset=)"):
        assert tensor[n]["status"] == "covered"
        assert "test_isa_indirect.py" in tensor[n]["tests"]
