// Probe drives dpsql serve through PostgreSQL's JDBC driver (TestJDBC):
// metadata (schemas, tables, columns), a PreparedStatement with a
// parameter, and the ResultSetMetaData of its answer.
import java.sql.*;
public class Probe {
  static int count(ResultSet rs) throws SQLException { int n = 0; while (rs.next()) n++; return n; }
  public static void main(String[] a) throws Exception {
    String url = a[0];
    try (Connection c = DriverManager.getConnection(url, a[1], a[2])) {
      DatabaseMetaData md = c.getMetaData();
      System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());
      try (ResultSet rs = md.getSchemas()) { while (rs.next()) System.out.println("schema " + rs.getString("TABLE_SCHEM")); }
      try (ResultSet rs = md.getTables(null, null, "%", new String[]{"TABLE"})) { while (rs.next()) System.out.println("table " + rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME")); }
      try (ResultSet rs = md.getColumns(null, null, "t", "%")) { while (rs.next()) System.out.println("column " + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME") + " " + rs.getInt("DATA_TYPE")); }
      // What DBeaver and other tools call when they open a table: each
      // answers (empty where dpsql has no such thing) instead of failing.
      try (ResultSet rs = md.getPrimaryKeys(null, null, "t")) { System.out.println("primary keys " + count(rs)); }
      try (ResultSet rs = md.getIndexInfo(null, null, "t", false, true)) { System.out.println("indexes " + count(rs)); }
      try (ResultSet rs = md.getImportedKeys(null, null, "t")) { System.out.println("imported keys " + count(rs)); }
      try (ResultSet rs = md.getExportedKeys(null, null, "t")) { System.out.println("exported keys " + count(rs)); }
      try (ResultSet rs = md.getTypeInfo()) { int n = 0; boolean text = false; while (rs.next()) { n++; text |= rs.getString("TYPE_NAME").equals("text"); } System.out.println("types " + (n > 0) + " text " + text); }
      try (ResultSet rs = md.getFunctions(null, null, "%")) { System.out.println("functions " + (count(rs) >= 0)); }
      try (Statement s = c.createStatement()) { s.execute("SET epsilon = 1"); }
      try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) AS n, AVG(x) FROM t WHERE x < ?")) {
        ps.setInt(1, 500);
        try (ResultSet rs = ps.executeQuery()) {
          ResultSetMetaData rm = rs.getMetaData();
          for (int i = 1; i <= rm.getColumnCount(); i++) System.out.println("meta " + rm.getColumnName(i) + " " + rm.getColumnTypeName(i));
          while (rs.next()) System.out.println("row " + (rs.getLong(1) > 0));
        }
      }
    }
  }
}
