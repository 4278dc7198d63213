public class Broken {
    public static void main(String[] args) {
        undefinedMethodOfABrokenTarget();
    }
}
