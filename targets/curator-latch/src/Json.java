import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the node API needs, with the JDK alone: a reader of any
 * value (objects as maps, arrays as lists, integers as Long, other numbers
 * as Double) and the quoting of strings. Bad JSON is an
 * IllegalArgumentException.
 */
final class Json {
    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /** The JSON object s, which must be one object and nothing more. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> object(String s) {
        Json p = new Json(s);
        Object v = p.value();
        p.space();
        if (!(v instanceof Map) || p.i != s.length()) {
            throw new IllegalArgumentException("not one JSON object");
        }
        return (Map<String, Object>) v;
    }

    /** s as a JSON string. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private Object value() {
        space();
        switch (peek()) {
            case '{' -> {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                if (skip('}')) {
                    return m;
                }
                do {
                    space();
                    expect('"');
                    String k = string();
                    space();
                    expect(':');
                    m.put(k, value());
                } while (skip(','));
                expect('}');
                return m;
            }
            case '[' -> {
                i++;
                List<Object> l = new ArrayList<>();
                if (skip(']')) {
                    return l;
                }
                do {
                    l.add(value());
                } while (skip(','));
                expect(']');
                return l;
            }
            case '"' -> {
                i++;
                return string();
            }
            default -> {
                return literal();
            }
        }
    }

    /** The rest of a string whose opening quote was read. */
    private String string() {
        StringBuilder b = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                return b.toString();
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (i + 4 > s.length()) {
                        throw new IllegalArgumentException("a \\u escape cut short");
                    }
                    b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    i += 4;
                }
                default -> throw new IllegalArgumentException("bad escape \\" + e);
            }
        }
    }

    /** true, false, null or a number. */
    private Object literal() {
        int start = i;
        while (i < s.length() && "{}[],: \t\r\n".indexOf(s.charAt(i)) < 0) {
            i++;
        }
        String w = s.substring(start, i);
        switch (w) {
            case "true":
                return Boolean.TRUE;
            case "false":
                return Boolean.FALSE;
            case "null":
                return null;
            default:
                try {
                    return w.matches("-?\\d+") ? (Object) Long.parseLong(w) : (Object) Double.parseDouble(w);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("not JSON: " + w);
                }
        }
    }

    private void space() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
    }

    private char peek() {
        if (i >= s.length()) {
            throw new IllegalArgumentException("JSON cut short");
        }
        return s.charAt(i);
    }

    private char next() {
        char c = peek();
        i++;
        return c;
    }

    private boolean skip(char c) {
        space();
        if (i < s.length() && s.charAt(i) == c) {
            i++;
            return true;
        }
        return false;
    }

    private void expect(char c) {
        if (!skip(c)) {
            throw new IllegalArgumentException("expected " + c + " at " + i);
        }
    }
}
