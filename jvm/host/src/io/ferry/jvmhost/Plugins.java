// Finding connector classes in plugin.path and loading each plugin in a class loader of its own
// (jvm/README.md, "Plugins and isolation").
//
// A plugin location is a jar directly in a plugin.path folder, or a folder there holding jars
// (searched to any depth), as Kafka Connect's plugin.path. Each location gets one
// PluginClassLoader. Connector classes are found through the location's ServiceLoader manifests
// (META-INF/services/org.apache.kafka.connect.{source.SourceConnector,sink.SinkConnector}), or,
// for a jar without them, by reading its class entries and checking each class (loaded without
// initialising it).
package io.ferry.jvmhost;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.SourceConnector;

final class Plugins {
  static final int SOURCE = 1;
  static final int SINK = 2;

  static final class Plugin {
    final String className;
    final int kind;
    final String version;
    final String location;
    final ClassLoader loader;
    final boolean openMessaging;  // written to the OpenMessaging connector API, not Kafka Connect's

    Plugin(String className, int kind, String version, String location, ClassLoader loader, boolean openMessaging) {
      this.className = className;
      this.kind = kind;
      this.version = version;
      this.location = location;
      this.loader = loader;
      this.openMessaging = openMessaging;
    }
  }

  final Map<String, Plugin> byClass = new TreeMap<>();
  // A location that could not be read, or a class that could not be loaded: (where, why).
  final List<String[]> problems = new ArrayList<>();

  // Child-first loading, except for the classes the host and every plugin must share: the JDK,
  // the Kafka Connect API and Kafka's common classes (from the host's class path), and SLF4J. A
  // plugin's own copy of those is never used, as in Kafka Connect.
  static final class PluginClassLoader extends URLClassLoader {
    PluginClassLoader(String location, URL[] urls, ClassLoader parent) {
      super("ferry-plugin:" + location, urls, parent);
    }

    // The API packages of connect-api (the implementations in other Kafka jars, such as
    // org.apache.kafka.connect.file or .mirror, belong to their plugins).
    private static final String[] CONNECT_API = java.util.stream.Stream.of(
            "connector.", "source.", "sink.", "data.", "errors.", "header.", "storage.", "transforms.Transformation",
            "transforms.predicates.Predicate", "util.", "health.", "components.", "rest.", "converters.")
        .map(p -> "org.apache.kafka.connect." + p).toArray(String[]::new);

    static boolean shared(String name) {
      if (name.startsWith("java.") || name.startsWith("javax.") || name.startsWith("jdk.") || name.startsWith("sun.")
          || name.startsWith("org.slf4j.") || name.startsWith("io.openmessaging.") || name.startsWith("org.apache.kafka.common.")
          || name.startsWith("org.apache.kafka.clients.")) return true;
      for (String p : CONNECT_API) if (name.startsWith(p)) return true;
      return false;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          if (shared(name)) {
            try {
              c = getParent().loadClass(name);
            } catch (ClassNotFoundException e) {
              c = findClass(name);  // an API class the host does not have: the plugin's own
            }
          } else {
            try {
              c = findClass(name);
            } catch (ClassNotFoundException e) {
              c = getParent().loadClass(name);
            }
          }
        }
        if (resolve) resolveClass(c);
        return c;
      }
    }

    @Override
    public URL getResource(String name) {
      URL u = findResource(name);  // the plugin's own resources first
      return u != null ? u : super.getResource(name);
    }
  }

  void scan(List<String> folders) {
    // jvm.plugin.isolation=false: one class loader for every plugin (they then share libraries).
    boolean isolated = !"false".equals(System.getProperty("ferry.plugin.isolation"));
    List<File> all = new ArrayList<>();
    for (String folder : folders) {
      File[] entries = new File(folder).listFiles();
      if (entries == null) {
        problems.add(new String[] {folder, "not a readable folder"});
        continue;
      }
      java.util.Arrays.sort(entries);
      for (File e : entries) {
        List<File> jars = new ArrayList<>();
        if (e.isFile() && e.getName().endsWith(".jar")) jars.add(e);
        else if (e.isDirectory()) collectJars(e, jars, 0);
        if (jars.isEmpty()) continue;
        if (isolated) scanLocation(e.getPath(), jars);
        else all.addAll(jars);
      }
    }
    if (!isolated && !all.isEmpty()) scanLocation(String.join(File.pathSeparator, folders), all);
  }

  private static void collectJars(File dir, List<File> out, int depth) {
    File[] files = dir.listFiles();
    if (files == null || depth > 8) return;
    java.util.Arrays.sort(files);
    for (File f : files) {
      if (f.isDirectory()) collectJars(f, out, depth + 1);
      else if (f.getName().endsWith(".jar")) out.add(f);
    }
  }

  private void scanLocation(String location, List<File> jars) {
    URL[] urls = new URL[jars.size()];
    try {
      for (int i = 0; i < jars.size(); i++) urls[i] = jars.get(i).toURI().toURL();
    } catch (IOException e) {
      problems.add(new String[] {location, e.toString()});
      return;
    }
    PluginClassLoader loader = new PluginClassLoader(location, urls, Plugins.class.getClassLoader());
    Set<String> names = new LinkedHashSet<>();
    for (File jar : jars) {
      try (JarFile jf = new JarFile(jar)) {
        boolean manifests = false;
        for (String service : new String[] {"META-INF/services/" + SourceConnector.class.getName(),
                                            "META-INF/services/" + SinkConnector.class.getName()}) {
          JarEntry entry = jf.getJarEntry(service);
          if (entry == null) continue;
          manifests = true;
          try (InputStream in = jf.getInputStream(entry)) {
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
              String name = line.replaceAll("#.*", "").trim();
              if (!name.isEmpty()) names.add(name);
            }
          }
        }
        if (!manifests) {  // an older plugin, or an OpenMessaging one: look at its classes
          for (Enumeration<JarEntry> en = jf.entries(); en.hasMoreElements();) {
            String n = en.nextElement().getName();
            if (n.endsWith("Connector.class") && !n.contains("$")) names.add(n.substring(0, n.length() - 6).replace('/', '.'));
          }
        }
      } catch (IOException e) {
        problems.add(new String[] {jar.getPath(), "cannot read the jar: " + e.getMessage()});
      }
    }
    for (String name : names) {
      try {
        Class<?> c = Class.forName(name, false, loader);
        if (Modifier.isAbstract(c.getModifiers()) || c.isInterface()) continue;
        boolean om = false;
        int kind;
        if (SourceConnector.class.isAssignableFrom(c)) kind = SOURCE;
        else if (SinkConnector.class.isAssignableFrom(c)) kind = SINK;
        else if (io.openmessaging.connector.api.component.task.source.SourceConnector.class.isAssignableFrom(c)) {
          kind = SOURCE;
          om = true;
        } else if (io.openmessaging.connector.api.component.task.sink.SinkConnector.class.isAssignableFrom(c)) {
          kind = SINK;
          om = true;
        } else continue;
        if (byClass.containsKey(name)) {
          problems.add(new String[] {location, name + " is also in " + byClass.get(name).location + "; that one is used"});
          continue;
        }
        String version = om ? packageVersion(c) : versionOf(c, loader);
        byClass.put(name, new Plugin(name, kind, version, location, loader, om));
      } catch (Throwable t) {  // a class that does not link (a missing dependency): reported, skipped
        problems.add(new String[] {location, "cannot load " + name + ": " + t});
      }
    }
  }

  // An OpenMessaging connector has no version(): its jar's Implementation-Version, if any.
  private static String packageVersion(Class<?> c) {
    Package p = c.getPackage();
    String v = p == null ? null : p.getImplementationVersion();
    return v == null ? "unknown" : v;
  }

  // Connector.version() of a new instance, as Kafka Connect shows it; "unknown" when it throws.
  private static String versionOf(Class<?> c, ClassLoader loader) {
    ClassLoader saved = Thread.currentThread().getContextClassLoader();
    Thread.currentThread().setContextClassLoader(loader);
    try {
      Connector instance = (Connector) c.getDeclaredConstructor().newInstance();
      String v = instance.version();
      return v == null ? "unknown" : v;
    } catch (Throwable t) {
      return "unknown";
    } finally {
      Thread.currentThread().setContextClassLoader(saved);
    }
  }

  Plugin plugin(String className) throws ClassNotFoundException {
    Plugin p = byClass.get(className);
    if (p == null) throw new ClassNotFoundException("no connector class " + className + " in plugin.path");
    return p;
  }

  Object newInstance(String className) throws Exception {
    return Class.forName(className, true, plugin(className).loader).getDeclaredConstructor().newInstance();
  }

  // A Kafka Connect connector; an OpenMessaging one comes wrapped in one (OpenMessaging.java).
  Connector newConnector(String className) throws Exception {
    Object o = newInstance(className);
    if (plugin(className).openMessaging) return OpenMessaging.wrap(o);
    if (!(o instanceof Connector)) throw new IllegalArgumentException(className + " is not a Kafka Connect connector");
    return (Connector) o;
  }

  ClassLoader loaderOf(String className) {
    Plugin p = byClass.get(className);
    return p == null ? Plugins.class.getClassLoader() : p.loader;
  }
}
