"""pack_rock.py DIR ROCK - zips DIR (a binary rock's files: the rockspec,
lib/, lua/, doc/) into ROCK with the rock_manifest that `luarocks pack`
writes: each file's MD5, in nested tables by folder, keys sorted."""
import hashlib
import os
import sys
import zipfile


def tree(root):
    out = {}
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.isdir(path):
            out[name] = tree(path)
        elif name != "rock_manifest":
            with open(path, "rb") as f:
                out[name] = hashlib.md5(f.read()).hexdigest()
    return out


def lua(table, indent=1):
    pad = "   " * indent
    lines = ["{"]
    entries = sorted(table.items())
    for i, (key, value) in enumerate(entries):
        name = key if key.isidentifier() else '["%s"]' % key
        text = lua(value, indent + 1) if isinstance(value, dict) else '"%s"' % value
        lines.append("%s%s = %s%s" % (pad, name, text, "," if i < len(entries) - 1 else ""))
    lines.append("   " * (indent - 1) + "}")
    return "\n".join(lines)


def main():
    root, rock = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "rock_manifest"), "w") as f:
        f.write("rock_manifest = " + lua(tree(root)) + "\n")
    with zipfile.ZipFile(rock, "w", zipfile.ZIP_DEFLATED) as z:
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                path = os.path.join(folder, name)
                z.write(path, os.path.relpath(path, root))


main()
