package io.redlock.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the JNI library. The jar carries it as the resource
 * {@code /native/<os>-<arch>/libredlock_jni.so}; it is copied to a temporary file, loaded, and
 * the file deleted (the loaded library stays mapped). Where the jar has no library for the
 * platform, it is looked up on {@code java.library.path}.
 */
final class NativeLoader {
    private static final String NAME = "redlock_jni";

    private NativeLoader() {}

    static void load() {
        String resource = "/native/" + platform() + "/" + System.mapLibraryName(NAME);
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                System.loadLibrary(NAME);
                return;
            }
            Path file = Files.createTempFile(NAME, ".so");
            try {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                System.load(file.toAbsolutePath().toString());
            } finally {
                Files.delete(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract " + resource, e);
        }
    }

    /** "linux-x86_64", as CMake names the platform. */
    private static String platform() {
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT).replace(" ", "");
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64")) {
            arch = "x86_64";
        }
        return os + "-" + arch;
    }
}
