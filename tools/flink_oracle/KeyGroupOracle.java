import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.util.MathUtils;

/**
 * Prints reference vectors for key-group assignment, computed by Flink's own
 * {@code KeyGroupRangeAssignment} and {@code MathUtils.murmurHash}, as JSON on stdout.
 *
 * <p>Usage: {@code java -cp <flink-dist.jar>:. KeyGroupOracle <flink-version>}
 */
public final class KeyGroupOracle {

    /** Max parallelisms every key is assigned for (assignToKeyGroup does not bound them). */
    private static final int[] MAX_PARALLELISMS = {
        1, 2, 3, 7, 100, 127, 128, 129, 256, 1000, 4096, 10007, 32767, 32768
    };

    /** (maxParallelism, parallelism) pairs every key is routed for. */
    private static final int[][] OPERATOR_PAIRS = {{128, 3}, {4096, 17}, {32768, 1000}};

    /** (maxParallelism, parallelism) pairs whose ranges and operator indexes are listed. */
    private static final int[][] RANGE_PAIRS = {
        {1, 1}, {2, 1}, {5, 3}, {7, 7}, {128, 1}, {128, 3}, {128, 7}, {128, 128}, {256, 10},
        {1000, 7}, {4096, 17}, {4096, 4095}, {32768, 1}, {32768, 999}, {32768, 1000}
    };

    private static final long SEED = 20240607L;

    private KeyGroupOracle() {}

    public static void main(String[] args) {
        String version = args.length > 0 ? args[0] : "unknown";
        Random random = new Random(SEED);
        StringBuilder out = new StringBuilder(1 << 20);
        out.append("{\n");
        out.append("\"flink_version\": ").append(quote(version)).append(",\n");
        out.append("\"max_parallelisms\": ").append(intArray(MAX_PARALLELISMS)).append(",\n");
        out.append("\"operator_pairs\": ").append(pairArray(OPERATOR_PAIRS)).append(",\n");

        out.append("\"string_keys\": [\n");
        List<String> strings = stringKeys(random);
        for (int i = 0; i < strings.size(); i++) {
            String key = strings.get(i);
            out.append("[").append(quote(key)).append(", ").append(keyVector(key)).append("]");
            out.append(i + 1 < strings.size() ? ",\n" : "\n");
        }
        out.append("],\n");

        out.append("\"long_keys\": [\n");
        List<Long> longs = longKeys(random);
        for (int i = 0; i < longs.size(); i++) {
            Long key = longs.get(i);
            out.append("[").append(key.longValue()).append(", ").append(keyVector(key)).append("]");
            out.append(i + 1 < longs.size() ? ",\n" : "\n");
        }
        out.append("],\n");

        out.append("\"murmur\": [\n");
        List<Integer> codes = murmurInputs(random);
        for (int i = 0; i < codes.size(); i++) {
            int code = codes.get(i);
            out.append("[").append(code).append(", ").append(MathUtils.murmurHash(code)).append("]");
            out.append(i + 1 < codes.size() ? ",\n" : "\n");
        }
        out.append("],\n");

        out.append("\"ranges\": [\n");
        for (int i = 0; i < RANGE_PAIRS.length; i++) {
            int maxParallelism = RANGE_PAIRS[i][0];
            int parallelism = RANGE_PAIRS[i][1];
            out.append("{\"max_parallelism\": ").append(maxParallelism);
            out.append(", \"parallelism\": ").append(parallelism);
            out.append(", \"ranges\": [");
            for (int op = 0; op < parallelism; op++) {
                KeyGroupRange range =
                        KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                                maxParallelism, parallelism, op);
                out.append(op == 0 ? "" : ", ");
                out.append("[").append(range.getStartKeyGroup()).append(", ");
                out.append(range.getEndKeyGroup()).append("]");
            }
            out.append("], \"operator_index\": [");
            List<Integer> keyGroups = sampleKeyGroups(maxParallelism, random);
            for (int j = 0; j < keyGroups.size(); j++) {
                int keyGroup = keyGroups.get(j);
                int op =
                        KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(
                                maxParallelism, parallelism, keyGroup);
                out.append(j == 0 ? "" : ", ");
                out.append("[").append(keyGroup).append(", ").append(op).append("]");
            }
            out.append("]}");
            out.append(i + 1 < RANGE_PAIRS.length ? ",\n" : "\n");
        }
        out.append("],\n");

        out.append("\"range_errors\": [");
        int[][] badPairs = {{0, 1}, {1, 0}, {3, 5}, {32769, 1}, {32768, 32769}, {-1, 1}};
        boolean first = true;
        for (int[] pair : badPairs) {
            if (raisesForRange(pair[0], pair[1])) {
                out.append(first ? "" : ", ").append("[").append(pair[0]).append(", ");
                out.append(pair[1]).append("]");
                first = false;
            } else {
                throw new IllegalStateException("expected an error for " + pair[0] + "," + pair[1]);
            }
        }
        out.append("],\n");

        out.append("\"default_max_parallelism\": [");
        TreeSet<Integer> parallelisms = new TreeSet<>();
        for (int p = 1; p <= 300; p++) {
            parallelisms.add(p);
        }
        for (int p = 301; p <= 5000; p += 7) {
            parallelisms.add(p);
        }
        for (int shift = 1; shift <= 16; shift++) {
            int pow = 1 << shift;
            // p + p / 2 crosses pow around 2 * pow / 3
            for (int p = Math.max(1, 2 * pow / 3 - 2); p <= 2 * pow / 3 + 2; p++) {
                parallelisms.add(p);
            }
        }
        parallelisms.add(5000);
        parallelisms.add(21845);
        parallelisms.add(21846);
        parallelisms.add(32767);
        parallelisms.add(32768);
        first = true;
        for (int p : parallelisms) {
            if (p > KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM) {
                continue;
            }
            out.append(first ? "" : ", ").append("[").append(p).append(", ");
            out.append(KeyGroupRangeAssignment.computeDefaultMaxParallelism(p)).append("]");
            first = false;
        }
        out.append("],\n");

        out.append("\"default_max_parallelism_errors\": [");
        int[] badParallelisms = {0, -1, 32769, Integer.MAX_VALUE};
        for (int i = 0; i < badParallelisms.length; i++) {
            int p = badParallelisms[i];
            try {
                KeyGroupRangeAssignment.computeDefaultMaxParallelism(p);
                throw new IllegalStateException("expected an error for parallelism " + p);
            } catch (IllegalArgumentException expected) {
                out.append(i == 0 ? "" : ", ").append(p);
            }
        }
        out.append("]\n");
        out.append("}\n");
        System.out.print(out);
    }

    /** [hashCode, murmurHash(hashCode), [key group per max parallelism], [operator per pair]]. */
    private static String keyVector(Object key) {
        int hash = key.hashCode();
        StringBuilder sb = new StringBuilder();
        sb.append(hash).append(", ").append(MathUtils.murmurHash(hash)).append(", [");
        for (int i = 0; i < MAX_PARALLELISMS.length; i++) {
            sb.append(i == 0 ? "" : ", ");
            sb.append(KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISMS[i]));
        }
        sb.append("], [");
        for (int i = 0; i < OPERATOR_PAIRS.length; i++) {
            sb.append(i == 0 ? "" : ", ");
            sb.append(
                    KeyGroupRangeAssignment.assignKeyToParallelOperator(
                            key, OPERATOR_PAIRS[i][0], OPERATOR_PAIRS[i][1]));
        }
        sb.append("]");
        return sb.toString();
    }

    private static boolean raisesForRange(int maxParallelism, int parallelism) {
        try {
            KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                    maxParallelism, parallelism, 0);
            return false;
        } catch (IllegalArgumentException expected) {
            return true;
        }
    }

    private static List<Integer> sampleKeyGroups(int maxParallelism, Random random) {
        TreeSet<Integer> groups = new TreeSet<>();
        if (maxParallelism <= 1024) {
            for (int kg = 0; kg < maxParallelism; kg++) {
                groups.add(kg);
            }
        } else {
            groups.add(0);
            groups.add(1);
            groups.add(maxParallelism - 2);
            groups.add(maxParallelism - 1);
            while (groups.size() < 200) {
                groups.add(random.nextInt(maxParallelism));
            }
        }
        return new ArrayList<>(groups);
    }

    private static List<String> stringKeys(Random random) {
        List<String> keys = new ArrayList<>();
        String[] fixed = {
            "", "a", "A", "0", " ", "hello", "Hello, World!", "user-42", "key", "polygenelubricants",
            "Aa", "BB", "sparktide", "The quick brown fox jumps over the lazy dog",
            "abcdefghijkl", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "\u0000", "a\u0000b", "\u0000\u0000\u0000", "tab\there", "line\nbreak", "quote\"back\\",
            "\u007f", "\u0080", "\u00ff", "caf\u00e9", "na\u00efve", "\u00c5ngstr\u00f6m",
            "Stra\u00dfe", "\u00e9t\u00e9", "e\u0301", "\u0152uvre", "\u0100\u017f",
            "\u4e2d\u6587", "\u6f22\u5b57\u304b\u306a", "\ud55c\uad6d\uc5b4", "\u0440\u0443\u0441",
            "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "\u05e2\u05d1\u05e8\u05d9\u05ea",
            "\u20ac", "\ufffd", "\uffff", "\ufeff", "\uffef",
            "\ud83d\ude00", "\ud83d\ude00\ud83d\ude01", "emoji \ud83d\ude80 rocket",
            "\ud834\udd1e", "\ud800\udc00", "\udbff\udfff", "\ud83c\uddfa\ud83c\uddf8",
            "mixed a\u00e9\u4e2d\ud83d\ude00\u0000z", "\ud800", "\udfff", "x\udc00y",
        };
        for (String s : fixed) {
            keys.add(s);
        }
        StringBuilder sb = new StringBuilder();
        for (int n : new int[] {100, 1000, 3000}) {
            sb.setLength(0);
            for (int i = 0; i < n; i++) {
                sb.append((char) ('a' + (i * 7) % 26));
            }
            keys.add(sb.toString());
            sb.setLength(0);
            for (int i = 0; i < n; i++) {
                sb.append(i % 3 == 0 ? '\u00e9' : (char) ('a' + i % 26));
            }
            keys.add(sb.toString());
        }
        for (int i = 0; i < 20; i++) {
            keys.add(Integer.toString(i));
        }
        // random strings from several alphabets
        for (int i = 0; i < 300; i++) {
            int len = random.nextInt(i < 200 ? 16 : 60);
            int alphabet = i % 5;
            sb.setLength(0);
            for (int j = 0; j < len; j++) {
                int cp;
                switch (alphabet) {
                    case 0:
                        cp = 0x20 + random.nextInt(0x5f);
                        break;
                    case 1:
                        cp = random.nextInt(0x80);
                        break;
                    case 2:
                        cp = 0xa0 + random.nextInt(0x180);
                        break;
                    case 3:
                        cp = 0x4e00 + random.nextInt(0x5000);
                        break;
                    default:
                        int pick = random.nextInt(4);
                        cp =
                                pick == 0
                                        ? 0x20 + random.nextInt(0x5f)
                                        : pick == 1
                                                ? 0xa0 + random.nextInt(0x200)
                                                : pick == 2
                                                        ? 0x3040 + random.nextInt(0x6000)
                                                        : 0x1f300 + random.nextInt(0x600);
                        break;
                }
                sb.appendCodePoint(cp);
            }
            keys.add(sb.toString());
        }
        return keys;
    }

    private static List<Long> longKeys(Random random) {
        TreeSet<Long> set = new TreeSet<>();
        long[] fixed = {
            0L, 1L, -1L, 2L, -2L, 7L, 42L, -42L, 127L, 128L, 255L, 256L, 1000L, 65535L, 65536L,
            Integer.MAX_VALUE, Integer.MIN_VALUE, Integer.MAX_VALUE + 1L, Integer.MIN_VALUE - 1L,
            1L << 31, -(1L << 31), (1L << 31) - 1, -(1L << 31) + 1,
            1L << 32, -(1L << 32), (1L << 32) - 1, (1L << 32) + 1, -(1L << 32) - 1,
            -(1L << 32) + 1, 1L << 33, 1L << 62, -(1L << 62), 1L << 53, (1L << 53) + 1,
            Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE - 1, Long.MIN_VALUE + 1,
            1_700_000_000_000L, 1_700_000_000_123L, 0x00000001_00000001L, 0xFFFFFFFF_00000000L,
            0x0000FFFF_FFFF0000L, 0x12345678_9ABCDEF0L,
        };
        for (long v : fixed) {
            set.add(v);
        }
        for (long v = -50; v <= 50; v++) {
            set.add(v);
        }
        while (set.size() < 400) {
            int kind = random.nextInt(4);
            long v =
                    kind == 0
                            ? random.nextLong()
                            : kind == 1
                                    ? random.nextInt()
                                    : kind == 2
                                            ? random.nextInt(1_000_000)
                                            : 1_600_000_000_000L
                                                    + (long) random.nextInt(Integer.MAX_VALUE);
            set.add(v);
        }
        return new ArrayList<>(set);
    }

    private static List<Integer> murmurInputs(Random random) {
        TreeSet<Integer> set = new TreeSet<>();
        int[] fixed = {
            0, 1, -1, 2, -2, 4, 127, 128, 0x7fff, 0x8000, 0xffff, 0x10000, Integer.MAX_VALUE,
            Integer.MIN_VALUE, Integer.MAX_VALUE - 1, Integer.MIN_VALUE + 1, 0xcc9e2d51,
            0x1b873593, 0xe6546b64, 0x85ebca6b, 0xc2b2ae35,
        };
        for (int v : fixed) {
            set.add(v);
        }
        while (set.size() < 200) {
            set.add(random.nextInt());
        }
        return new ArrayList<>(set);
    }

    private static String intArray(int[] values) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(values[i]);
        }
        return sb.append("]").toString();
    }

    private static String pairArray(int[][] pairs) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < pairs.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(intArray(pairs[i]));
        }
        return sb.append("]").toString();
    }

    /** JSON string literal; every char outside printable ASCII is a UTF-16 code unit escape. */
    private static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
