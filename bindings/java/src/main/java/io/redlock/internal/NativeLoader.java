package io.redlock.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Enumeration;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * Loads the JNI library. The jar carries one per platform, as the resource
 * {@code /native/<platform>/libredlock_jni.so}: {@code linux-x86_64} and {@code linux-aarch64}
 * for glibc, {@code linux-x86_64-musl} and {@code linux-aarch64-musl} for musl (Alpine, ...).
 * The one for this JVM's platform is copied to a temporary file, loaded, and the file deleted
 * (the loaded library stays mapped). Where the jar has none, it is looked up on
 * {@code java.library.path}; where that fails too, the error names the platform looked for and
 * those the jar carries.
 */
final class NativeLoader {
    private static final String NAME = "redlock_jni";

    private NativeLoader() {}

    static void load() {
        String platform = platform();
        String file = System.mapLibraryName(NAME);
        String resource = "/native/" + platform + "/" + file;
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                loadFromLibraryPath(platform, file);
                return;
            }
            // A new file only its owner can read or write (createTempFile's default on POSIX),
            // written in place: Files.copy with REPLACE_EXISTING would delete it and create
            // another with the umask's permissions.
            Path tmp = Files.createTempFile(NAME, ".so");
            try {
                try (OutputStream out = Files.newOutputStream(tmp)) {
                    in.transferTo(out);
                }
                System.load(tmp.toAbsolutePath().toString());
            } catch (UnsatisfiedLinkError e) {
                throw linkError("redlock: the jar's native library for " + platform
                                + " does not load from " + tmp + ": " + e.getMessage()
                                + " (if java.io.tmpdir is mounted noexec, -Djava.io.tmpdir=DIR"
                                + " names another folder)", e);
            } finally {
                Files.delete(tmp);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("redlock: cannot extract " + resource, e);
        }
    }

    /** The fallback where the jar has nothing for this platform: a library built from source. */
    private static void loadFromLibraryPath(String platform, String file) {
        try {
            System.loadLibrary(NAME);
        } catch (UnsatisfiedLinkError e) {
            Set<String> carried = carried();
            String jar = carried == null ? "the jar's platforms cannot be listed"
                         : carried.isEmpty() ? "the jar carries none"
                         : "the jar carries " + String.join(", ", carried);
            throw linkError("redlock: no native library for " + platform + ": " + jar + ", and no "
                            + file + " loads from java.library.path ("
                            + System.getProperty("java.library.path") + "). Build the jar"
                            + " from source on this platform (redlock's bindings/java/README.md"
                            + " says how) and use it, or put the " + file + " that build makes"
                            + " in a folder of java.library.path.", e);
        }
    }

    private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(message);
        error.initCause(cause);
        return error;
    }

    /**
     * This JVM's platform as the jar names its folders: the OS and the machine from the
     * properties os.name and os.arch, and "-musl" on Linux where the C library is musl.
     */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).replace(" ", "");
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64")) {
            arch = "x86_64";
        } else if (arch.equals("arm64")) {
            arch = "aarch64";
        }
        String platform = os + "-" + arch;
        return os.equals("linux") && isMusl() ? platform + "-musl" : platform;
    }

    /**
     * Whether this process's C library is musl: whether it has musl's C library mapped, which is
     * also its loader. Its file is named ld-musl-ARCH.so.1 (Alpine, with libc.musl-ARCH.so.1
     * linking to it) or libc.so (musl's own install, Debian's and Void's, which link
     * ld-musl-ARCH.so.1 to it); glibc's is libc.so.6. What the process has mapped is what a
     * library loaded into it links with, whatever else the system holds (Debian's musl package
     * installs ld-musl-ARCH.so.1 beside glibc; Alpine's gcompat runs glibc's programs on musl).
     * Without /proc, musl's loader in /lib decides.
     */
    private static boolean isMusl() {
        // Latin-1: any byte of a mapped file's name reads as a character.
        Path mapsFile = Paths.get("/proc/self/maps");
        try (Stream<String> maps = Files.lines(mapsFile, StandardCharsets.ISO_8859_1)) {
            return maps.anyMatch(NativeLoader::mapsMusl);
        } catch (IOException | UncheckedIOException e) {
            Path lib = Paths.get("/lib");
            try (DirectoryStream<Path> loaders = Files.newDirectoryStream(lib, "ld-musl-*.so.1")) {
                return loaders.iterator().hasNext();
            } catch (IOException notThere) {
                return false;
            }
        }
    }

    /** Whether a line of /proc/self/maps maps musl's C library. */
    static boolean mapsMusl(String line) {
        // The file's name, after the last slash (a line without a path maps no file).
        String name = line.substring(line.lastIndexOf('/') + 1);
        return name.startsWith("ld-musl-") || name.startsWith("libc.musl-")
               || name.equals("libc.so");
    }

    /**
     * The platforms the jar carries a library for (its folders under native/), for errors; null
     * when they cannot be listed.
     */
    static Set<String> carried() {
        Set<String> platforms = new TreeSet<>();
        try {
            URL self = NativeLoader.class.getResource("NativeLoader.class");
            URLConnection connection = self == null ? null : self.openConnection();
            if (connection instanceof JarURLConnection) {
                // A JarFile of its own, not the one the class loader may share: closed here.
                connection.setUseCaches(false);
                try (JarFile jar = ((JarURLConnection) connection).getJarFile()) {
                    Enumeration<JarEntry> entries = jar.entries();
                    while (entries.hasMoreElements()) {
                        String[] parts = entries.nextElement().getName().split("/");
                        if (parts.length == 3 && parts[0].equals("native")) {
                            platforms.add(parts[1]);
                        }
                    }
                }
                return platforms;
            }
            // Classes in folders (Maven's tests).
            URL folder = NativeLoader.class.getResource("/native/");
            if (folder == null || !folder.getProtocol().equals("file")) {
                return folder == null ? platforms : null;
            }
            Path natives = Paths.get(folder.toURI());
            try (DirectoryStream<Path> folders = Files.newDirectoryStream(natives)) {
                for (Path platform : folders) {
                    if (Files.isDirectory(platform)) {
                        platforms.add(platform.getFileName().toString());
                    }
                }
            }
            return platforms;
        } catch (IOException | URISyntaxException | RuntimeException e) {
            return null;
        }
    }
}
