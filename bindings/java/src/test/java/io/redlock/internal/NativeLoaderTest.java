package io.redlock.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.junit.jupiter.api.Test;

class NativeLoaderTest {
    private static final String MAP = "7f3c1a000000-7f3c1a014000 r-xp 00000000 08:01 1234 ";

    @Test
    void muslIsTheMappedCLibrary() {
        // Alpine's names, Debian's musl package's, musl's own install (Void).
        assertTrue(NativeLoader.mapsMusl(MAP + "/lib/ld-musl-x86_64.so.1"));
        assertTrue(NativeLoader.mapsMusl(MAP + "/lib/libc.musl-aarch64.so.1"));
        assertTrue(NativeLoader.mapsMusl(MAP + "/usr/lib/x86_64-linux-musl/libc.so"));
        assertTrue(NativeLoader.mapsMusl(MAP + "/usr/lib/libc.so"));
        assertFalse(NativeLoader.mapsMusl(MAP + "/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assertFalse(NativeLoader.mapsMusl(MAP + "/lib64/ld-linux-x86-64.so.2"));
        assertFalse(NativeLoader.mapsMusl(MAP + "/home/me/ld-musl-notes/libfoo.so"));
        assertFalse(NativeLoader.mapsMusl("7f3c1a000000-7f3c1a014000 rw-p 00000000 00:00 0 "));
        assertFalse(NativeLoader.mapsMusl(MAP + "[heap]"));
    }

    @Test
    void platformNamesTheMachineAsTheJarDoes() {
        String arch = System.getProperty("os.arch");
        try {
            for (String[] pair : new String[][] {{"amd64", "x86_64"}, {"x86_64", "x86_64"},
                                                 {"aarch64", "aarch64"}, {"arm64", "aarch64"},
                                                 {"riscv64", "riscv64"}}) {
                System.setProperty("os.arch", pair[0]);
                String platform = NativeLoader.platform();
                assertTrue(platform.equals("linux-" + pair[1])
                           || platform.equals("linux-" + pair[1] + "-musl"),
                           pair[0] + " gives " + platform);
            }
        } finally {
            System.setProperty("os.arch", arch);
        }
    }

    @Test
    void theLibraryBuiltIsAmongThoseCarried() {
        // The tests run on the classes' folder, which holds this machine's library.
        Set<String> carried = NativeLoader.carried();
        assertTrue(carried.contains(NativeLoader.platform()), carried.toString());
    }
}
