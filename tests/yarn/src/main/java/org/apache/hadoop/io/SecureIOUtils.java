// The harness's own org.apache.hadoop.io.SecureIOUtils, ahead of hadoop-common's on the classpath.
//
// On a secured cluster a NodeManager opens container log files through this class (to serve
// them on its web API, and to upload them when it aggregates an application's logs), and
// Hadoop's version then checks each file's owner with NativeIO's fstat, which needs libhadoop.so:
// no Maven artifact ships it, so in the Kerberized harness (`cluster start --kerberos`) every
// such open failed, and no log was served or aggregated. This version has the same API and
// checks the owner with java.nio's POSIX attributes instead (read without following a link,
// then the file opened; an attacker could swap the file in between, which a test cluster on
// one machine does not need to fear). Without security it opens files as Hadoop's does.
package org.apache.hadoop.io;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.UserGroupInformation;

public class SecureIOUtils {
  public SecureIOUtils() {}

  public static RandomAccessFile openForRandomRead(File f, String mode, String expectedOwner,
      String expectedGroup) throws IOException {
    if (UserGroupInformation.isSecurityEnabled()) {
      checkOwner(f, expectedOwner);
    }
    return new RandomAccessFile(f, mode);
  }

  protected static RandomAccessFile forceSecureOpenForRandomRead(File f, String mode,
      String expectedOwner, String expectedGroup) throws IOException {
    checkOwner(f, expectedOwner);
    return new RandomAccessFile(f, mode);
  }

  public static FSDataInputStream openFSDataInputStream(File file, String expectedOwner,
      String expectedGroup) throws IOException {
    if (UserGroupInformation.isSecurityEnabled()) {
      checkOwner(file, expectedOwner);
    }
    return raw().open(new Path(file.getAbsolutePath()));
  }

  protected static FSDataInputStream forceSecureOpenFSDataInputStream(File file,
      String expectedOwner, String expectedGroup) throws IOException {
    checkOwner(file, expectedOwner);
    return raw().open(new Path(file.getAbsolutePath()));
  }

  public static FileInputStream openForRead(File f, String expectedOwner, String expectedGroup)
      throws IOException {
    if (UserGroupInformation.isSecurityEnabled()) {
      checkOwner(f, expectedOwner);
    }
    return new FileInputStream(f);
  }

  protected static FileInputStream forceSecureOpenForRead(File f, String expectedOwner,
      String expectedGroup) throws IOException {
    checkOwner(f, expectedOwner);
    return new FileInputStream(f);
  }

  // Creates `f`, which must not exist, with the permission bits `permissions` (e.g. 0640).
  public static FileOutputStream createForWrite(File f, int permissions) throws IOException {
    if (!f.createNewFile()) {
      throw new AlreadyExistsException("File " + f + " already exists");
    }
    Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
    PosixFilePermission[] order = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_READ};
    for (int bit = 0; bit < order.length; ++bit) {
      if ((permissions & (1 << bit)) != 0) {
        perms.add(order[bit]);
      }
    }
    Files.setPosixFilePermissions(f.toPath(), perms);
    return new FileOutputStream(f);
  }

  private static void checkOwner(File f, String expectedOwner) throws IOException {
    if (expectedOwner == null) {
      return;
    }
    String owner = Files.readAttributes(f.toPath(), PosixFileAttributes.class,
        LinkOption.NOFOLLOW_LINKS).owner().getName();
    if (!expectedOwner.equals(owner)) {
      throw new IOException("Owner '" + owner + "' for path " + f
          + " did not match expected owner '" + expectedOwner + "'");
    }
  }

  private static FileSystem raw() throws IOException {
    return FileSystem.getLocal(new Configuration()).getRaw();
  }

  public static class AlreadyExistsException extends IOException {
    private static final long serialVersionUID = 1L;

    public AlreadyExistsException(String msg) {
      super(msg);
    }

    public AlreadyExistsException(Throwable cause) {
      super(cause);
    }
  }
}
