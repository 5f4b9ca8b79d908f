"""A long-lived supervisor keeps the shipped tree of its last single job for the next
one (runner Options.TreeCache): nothing one call did to its working directory reaches
the next, and a call that changed nothing leaves the tree for the next call to start in
without materialising it again."""

import ast


def test_calls_reuse_an_unchanged_tree_and_never_see_another_calls_changes(run_script, tmp_path):
    (tmp_path / "shipped.txt").write_text("original")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.txt").write_text("nested")
    p = run_script('''
import os, kinetic

@kinetic.run(accelerator="cpu")
def poke(step):
    seen = (open("shipped.txt").read(), open("sub/data.txt").read(), os.path.exists("added.txt"),
            os.path.exists("sub/added.txt"), sorted(os.listdir(".")))
    st = os.stat(".")
    if step == 0:  # changes of every kind: an edit, new files, a removal
        open("shipped.txt", "w").write("changed by call 0")
        open("added.txt", "w").write("x")
        open("sub/added.txt", "w").write("x")
    if step == 1:
        os.remove("sub/data.txt")
    return seen, (st.st_ino, st.st_ctime_ns)

print(repr([poke(i) for i in range(8)]))
''')
    calls = ast.literal_eval(p.stdout.strip().splitlines()[-1])
    for i, (seen, _) in enumerate(calls):
        assert seen[:4] == ("original", "nested", False, False), "call %d saw %r" % (i, seen)
        assert "added.txt" not in seen[4], "call %d saw %r" % (i, seen)
    # Calls 2..7 changed nothing: with two workers at most, some two of them started in
    # the same directory, not a copy made for each.
    dirs = [d for _, d in calls[2:]]
    assert len(set(dirs)) < len(dirs), "every call had a new working directory: %r" % (dirs,)
