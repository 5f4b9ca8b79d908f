"""A remote exception is re-raised as the user's own class (issue 28), even when the
class needs other constructor arguments than its args: rebuilt without calling its
__init__ (class, args, __dict__, cause/context chain, notes), and only when even that
fails as an instance of a subclass of both the user's class and RemoteError. The remote
traceback comes with it either way."""


SCRIPT = '''
import kinetic

class QuotaError(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code

class Picky(Exception):
    # Its __new__ needs the constructor's arguments too: not even cls.__new__(cls, *args)
    # rebuilds it.
    def __new__(cls, msg, code):
        return super().__new__(cls, msg, code)

    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code

@kinetic.run(accelerator="cpu")
def fail(kind):
    try:
        raise ValueError("the inner cause")
    except ValueError as inner:
        err = (QuotaError if kind == "quota" else Picky)("over quota", 429)
        err.add_note("a note of the user's")
        raise err from inner

for kind, cls in (("quota", QuotaError), ("picky", Picky)):
    try:
        fail(kind)
    except cls as e:
        print(kind, "CAUGHT", type(e).__name__, e.args, e.code)
        print(kind, "REMOTE_ERROR", isinstance(e, kinetic.RemoteError))
        print(kind, "CAUSE", repr(e.__cause__))
        print(kind, "NOTE", "a note of the user's" in getattr(e, "__notes__", []))
        print(kind, "TRACEBACK", "raise err from inner" in e.remote_traceback)
    except Exception as e:
        print(kind, "MISSED", type(e).__mro__, e)

b = fail.run_async_map(["quota"])
out = b.results(return_exceptions=True)
print("batch", "CAUGHT" if isinstance(out[0], QuotaError) else "MISSED %r" % (out[0],),
      getattr(out[0], "code", None))
'''


def test_exception_needing_constructor_arguments_is_reraised_as_itself(run_script):
    p = run_script(SCRIPT)
    out = p.stdout
    assert "quota CAUGHT QuotaError ('over quota',) 429" in out, out + p.stderr
    assert "quota REMOTE_ERROR False" in out, out
    assert "quota CAUSE ValueError('the inner cause')" in out, out
    assert "quota NOTE True" in out and "quota TRACEBACK True" in out, out
    # Not even cls.__new__ works: a subclass of both Picky and RemoteError.
    assert "picky CAUGHT Picky ('over quota',) 429" in out, out
    assert "picky REMOTE_ERROR True" in out, out
    assert "picky CAUSE ValueError('the inner cause')" in out, out
    assert "picky TRACEBACK True" in out, out
    assert "batch CAUGHT 429" in out, out
