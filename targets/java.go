package targets

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// JavaJars is where Debian's Java packages put their jars (Debian's Java
// policy), and where build.java finds the jars it names.
const JavaJars = "/usr/share/java"

// javaSource is a source file of a public class: Java names the file by
// the class.
var javaSource = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*\.java$`)

// javaJar is a jar's file name in JavaJars.
var javaJar = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*\.jar$`)

// checkJava checks build.java: the main class's source file, a file of
// the target's folder, then jar names.
func checkJava(value []string, dir string) error {
	main := value[0]
	if !javaSource.MatchString(filepath.Base(main)) {
		return fmt.Errorf("%q must be the source file of the main class, such as ./src/Node.java", main)
	}
	if fi, err := os.Stat(filepath.Join(dir, main)); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("no file %s in %s", main, dir)
	}
	for _, jar := range value[1:] {
		if !javaJar.MatchString(jar) {
			return fmt.Errorf("%q is not a jar's file name in %s, such as curator-recipes.jar", jar, JavaJars)
		}
	}
	return nil
}
