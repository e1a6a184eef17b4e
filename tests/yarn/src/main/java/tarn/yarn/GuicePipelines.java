// Each web app of the Hadoop 3.4.2 harness (`cluster --services`) answers with its own pages.
//
// Hadoop 3.4's WebApps register Guice's GuiceFilter with Jetty by class name, so Jetty makes
// the instance, and such a GuiceFilter dispatches to Guice's static pipeline: the one of the
// last injector made in the JVM. With the ResourceManager and two NodeManagers in one JVM,
// every web port served the last NodeManager's pages: the RM's /ws/v1/cluster/... answered 404
// and its port answered /ws/v1/node/info. Each WebApp also keeps the GuiceFilter its own
// injector made, bound to its own pipeline: this puts that one into Jetty's holder, initialised
// with the holder's configuration (its own servlet context), in place of Jetty's. Reflection
// only, on 3.4.2's private fields (WebApp.guiceFilter, FilterHolder._filter and _config,
// WebServer.webApp, ResourceManager.getWebapp), so that the class compiles on the 3.5.0
// classpath as well, where it is not used.
package tarn.yarn;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.service.Service;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

final class GuicePipelines {
  private GuicePipelines() {}

  static void giveEachWebAppItsOwn(MiniYARNCluster yarn, int nodeManagers) throws Exception {
    List<Object> webApps = new ArrayList<>();
    Method rmWebApp = findMethod(yarn.getResourceManager().getClass(), "getWebapp");
    webApps.add(rmWebApp.invoke(yarn.getResourceManager()));
    for (int i = 0; i < nodeManagers; ++i) {
      Object webServer = null;
      for (Service s : yarn.getNodeManager(i).getServices()) {
        if (s.getClass().getName().equals(
                "org.apache.hadoop.yarn.server.nodemanager.webapp.WebServer")) {
          webServer = s;
        }
      }
      if (webServer == null) {
        throw new IllegalStateException("NodeManager " + i + " has no WebServer service");
      }
      webApps.add(field(webServer.getClass(), "webApp").get(webServer));
    }
    for (Object webApp : webApps) {
      Class<?> webAppClass = Class.forName("org.apache.hadoop.yarn.webapp.WebApp");
      Object own = field(webAppClass, "guiceFilter").get(webApp);
      Object httpServer = webAppClass.getMethod("httpServer").invoke(webApp);
      Object context = httpServer.getClass().getMethod("getWebAppContext").invoke(httpServer);
      Object handler = findMethod(context.getClass(), "getServletHandler").invoke(context);
      Object holder =
          handler.getClass().getMethod("getFilter", String.class).invoke(handler, "guice");
      if (own == null || holder == null) {
        throw new IllegalStateException("web app " + webApp + ": no GuiceFilter to give it");
      }
      Class<?> holderClass = Class.forName("org.eclipse.jetty.servlet.FilterHolder");
      Object config = field(holderClass, "_config").get(holder);
      Class<?> filterConfig = Class.forName("javax.servlet.FilterConfig");
      own.getClass().getMethod("init", filterConfig).invoke(own, config);
      field(holderClass, "_filter").set(holder, own);
    }
  }

  private static Field field(Class<?> c, String name) throws NoSuchFieldException {
    for (Class<?> k = c; k != null; k = k.getSuperclass()) {
      try {
        Field f = k.getDeclaredField(name);
        f.setAccessible(true);
        return f;
      } catch (NoSuchFieldException e) {
        // Look in the superclass.
      }
    }
    throw new NoSuchFieldException(c.getName() + "." + name);
  }

  private static Method findMethod(Class<?> c, String name) throws NoSuchMethodException {
    for (Class<?> k = c; k != null; k = k.getSuperclass()) {
      for (Method m : k.getDeclaredMethods()) {
        if (m.getName().equals(name) && m.getParameterCount() == 0) {
          m.setAccessible(true);
          return m;
        }
      }
    }
    throw new NoSuchMethodException(c.getName() + "." + name + "()");
  }
}
